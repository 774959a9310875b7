package plugin

// Base is what every world's plugin has (world base): Configure is called once
// on every fresh instance with the plugin config as JSON text ("{}" when none),
// SelfCheck after it while a new plugin or config is validated. Embed
// NoSelfCheck to keep the default (ok).
type Base interface {
	Configure(config string) error
	SelfCheck() error
}

// NoSelfCheck gives a plugin the default SelfCheck, which accepts.
type NoSelfCheck struct{}

// SelfCheck accepts.
func (NoSelfCheck) SelfCheck() error { return nil }

// EvictionPolicy ranks the active pods for eviction (world eviction-policy).
// The answer is indices into pods, most evictable first; PodNamespace and the
// other pod-meta functions answer for these indices during the call.
type EvictionPolicy interface {
	Base
	Rank(node *NodeInfo, pressure []SignalObservation, pods []PodInfo) ([]uint32, error)
}

// GcStrategy plans image and container GC (world gc-strategy).
type GcStrategy interface {
	Base
	PlanImages(disk *DiskInfo, images []ImageInfo) ([]uint32, error)
	PlanContainers(dead []DeadContainer) ([]uint32, error)
}

// ProbeHandler runs one probe of one container (world probe-handler). pod
// reaches that pod only.
type ProbeHandler interface {
	Base
	Check(request *ProbeRequest, pod PodAccess) ProbeResult
}

// LifecycleHooks admits pods and runs container hooks (world lifecycle-hooks).
// pod-meta index 0 is the pod concerned. Embed NoContainerHooks for a plugin
// that only admits.
type LifecycleHooks interface {
	Base
	Admit(pod *AdmissionPod) error
	PostStart(container string, pod PodAccess) error
	PreStop(container string, graceMs uint32, pod PodAccess) error
}

// NoContainerHooks gives a LifecycleHooks plugin PostStart and PreStop that do
// nothing.
type NoContainerHooks struct{}

// PostStart does nothing.
func (NoContainerHooks) PostStart(string, PodAccess) error { return nil }

// PreStop does nothing.
func (NoContainerHooks) PreStop(string, uint32, PodAccess) error { return nil }

// PodAccess is network and exec access scoped to one pod (interface pod-access).
// Every call is bounded by timeoutMs and what is left of the call's deadline.
type PodAccess interface {
	HTTPGet(port uint16, path string, headers []Header, timeoutMs uint32) (*HTTPResponse, error)
	TCPConnect(port uint16, timeoutMs uint32) error
	Exec(container string, command []string, timeoutMs uint32) (*ExecOutput, error)
	// Sleep waits (hooks). In a probe the SDK answers an error without asking
	// the host: a probe returns and lets the next period run.
	Sleep(ms uint32) error
}
