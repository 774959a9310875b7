package plugin

// PressureEvictionPolicy is an EvictionPolicy that also watches the node's
// pressure stall information (world pressure-eviction-policy, contract 0.1.2):
// Watch is called once per eviction monitoring period while the kernel has
// PSI, whether or not a threshold is met, and may ask the host to evict before
// one is. nil asks nothing. The host bounds what it asks (wit/pressure.wit): at
// most one pressure eviction per psiEvictionWindow, never a critical or static
// pod, nor a Guaranteed pod within its requests unless the plugin config
// grants it. Register it with wasmlet.dev/plugin/pressure's Export.
type PressureEvictionPolicy interface {
	EvictionPolicy
	Watch(node *NodeInfo, psi *NodePSI, pods []PodInfo) (*EvictNow, error)
}

// PSILine is one line of /proc/pressure/<resource> (types.psi-line): the share
// of wall time in which at least one task (some) or every non-idle task at
// once (full) waited. Averages are in hundredths of a percent (avg10=12.34 is
// 1234), the total in microseconds since boot.
type PSILine struct {
	Avg10   uint32
	Avg60   uint32
	Avg300  uint32
	TotalUs uint64
}

// Percent is a PSI average in percent (1234 is 12.34).
func Percent(avg uint32) float64 { return float64(avg) / 100 }

// PSIResource is the some and full lines of one resource (types.psi-resource).
// A kernel without a full line (CPU before Linux 5.13) reads as zeros there.
type PSIResource struct {
	Some PSILine
	Full PSILine
}

// NodePSI is the node's pressure stall information, read once per cycle
// (types.node-psi); ReadUnixMs is when the host read it.
type NodePSI struct {
	CPU        PSIResource
	Memory     PSIResource
	IO         PSIResource
	ReadUnixMs uint64
}

// EvictNow asks the host to evict before a threshold is met (types.evict-now):
// Pods are indices into the call's pods, first to evict first (the host evicts
// at most the first eligible one); Reason is shown in the pod's status, its
// event and /evictions beside the reading.
type EvictNow struct {
	Pods   []uint32
	Reason string
}
