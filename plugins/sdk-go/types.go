// Package plugin is the Go SDK for wasmlet plugins: the records of the contract
// (wit/, package wasmlet:plugin@0.1.2) as Go structs, one interface per world,
// the host's functions, config parsing and the upstream default policies.
//
// A plugin is a `main` package that implements one interface (EvictionPolicy,
// PressureEvictionPolicy, GcStrategy, ProbeHandler or LifecycleHooks) and
// registers it in init() with the world package's Export
// (wasmlet.dev/plugin/eviction, .../pressure, .../gc, .../probe, .../hooks). The same code runs natively under `go test` with the plugintest
// package, and is built into a component with GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared plus scripts/build-sdk-plugins.sh (see plugins/README.md).
package plugin

// QosClass is the pod's Kubernetes QoS class (types.qos-class). The values are
// the wire form's QoS byte.
type QosClass uint8

const (
	Guaranteed QosClass = 0
	Burstable  QosClass = 1
	BestEffort QosClass = 2
)

// PodInfo is one active pod in an eviction cycle (types.pod-info), decoded from
// rank's packed pod list. See wit/types.wit for what the host puts in each field.
type PodInfo struct {
	Priority           int32
	Qos                QosClass
	IsStatic           bool
	IsCritical         bool
	HasStats           bool
	MemoryRequestBytes uint64
	MemoryUsageBytes   uint64
	CPURequestMillis   uint64
	CPUUsageMillis     uint64
	DiskRequestBytes   uint64
	DiskUsageBytes     uint64
	InodesUsed         uint64
	ProcessCount       uint64
	ContainerCount     uint32
	RestartCount       uint32
	StartTimeUnixMs    uint64
}

// IsEvictable tells whether the host may evict the pod at all: upstream never
// evicts a critical pod, and static pods count as critical.
func (p *PodInfo) IsEvictable() bool { return !p.IsCritical && !p.IsStatic }

// NodeInfo is the node as measured at the start of a call (types.node-info).
type NodeInfo struct {
	MemoryCapacityBytes    uint64
	MemoryAllocatableBytes uint64
	CPUCapacityMillis      uint64
	CPUAllocatableMillis   uint64
	PodsCapacity           uint32
	PodCount               uint32
	PidCapacity            uint64
	NodefsCapacityBytes    uint64
	ImagefsCapacityBytes   uint64
}

// Signal is an upstream eviction signal (types.signal), in WIT order.
type Signal uint8

const (
	MemoryAvailable Signal = iota
	AllocatableMemoryAvailable
	NodefsAvailable
	NodefsInodesFree
	ImagefsAvailable
	ImagefsInodesFree
	ContainerfsAvailable
	ContainerfsInodesFree
	PidAvailable
)

var signalNames = [...]string{
	"memory.available", "allocatableMemory.available", "nodefs.available", "nodefs.inodesFree",
	"imagefs.available", "imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree",
	"pid.available",
}

// String is the upstream spelling, e.g. "memory.available".
func (s Signal) String() string {
	if int(s) < len(signalNames) {
		return signalNames[s]
	}
	return "unknown"
}

// Pressure is the resource a signal starves, which picks the ranking function
// (upstream signalToRankFunc).
type Pressure uint8

const (
	MemoryPressure Pressure = iota
	PidPressure
	DiskPressure   // filesystem bytes (*.available of nodefs, imagefs, containerfs)
	InodesPressure // filesystem inodes (*.inodesFree)
)

// Pressure is the resource this signal starves.
func (s Signal) Pressure() Pressure {
	switch s {
	case MemoryAvailable, AllocatableMemoryAvailable:
		return MemoryPressure
	case PidAvailable:
		return PidPressure
	case NodefsInodesFree, ImagefsInodesFree, ContainerfsInodesFree:
		return InodesPressure
	default:
		return DiskPressure
	}
}

// SignalObservation is one eviction threshold that is met (types.signal-observation).
type SignalObservation struct {
	Signal    Signal
	Available int64
	Capacity  int64
	Threshold int64
}

// ImageInfo is one image in an image GC cycle (types.image-info).
type ImageInfo struct {
	SizeBytes       uint64
	FirstSeenUnixMs uint64
	LastUsedUnixMs  uint64
	InUse           bool
	Pinned          bool
}

// DiskInfo is the image filesystem and image GC policy of one cycle (types.disk-info).
type DiskInfo struct {
	CapacityBytes  uint64
	AvailableBytes uint64
	BytesToFree    uint64
	MinAgeMs       uint64
	MaxAgeMs       uint64
}

// DeadContainer is one dead container old enough to collect (types.dead-container).
type DeadContainer struct {
	PodDeleted       bool
	FinishedUnixMs   uint64
	PerContainerRank uint32
	Unit             uint32
	Pod              uint32
}

// Header is one HTTP header, name and value.
type Header struct{ Name, Value string }

// HTTPResponse is the answer of a scoped HTTPGet (types.http-response).
type HTTPResponse struct {
	Status  uint16
	Headers []Header
	Body    []byte
}

// ExecOutput is the answer of a scoped Exec (types.exec-output).
type ExecOutput struct {
	ExitCode int32
	Stdout   []byte
	Stderr   []byte
}

// ProbeKind says which probe of the container a check stands for.
type ProbeKind uint8

const (
	Liveness ProbeKind = iota
	Readiness
	Startup
)

// ProbeRequest is one probe run of one container (types.probe-request).
type ProbeRequest struct {
	Args       string
	TimeoutMs  uint32
	PodIP      string
	Ports      []uint16
	Containers []string
	Container  string
	Kind       ProbeKind
}

// ProbeOutcome is what a probe found (types.probe-outcome).
type ProbeOutcome uint8

const (
	Success ProbeOutcome = iota
	Failure
	Unknown
)

// String is the WIT spelling.
func (o ProbeOutcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	default:
		return "unknown"
	}
}

// ProbeResult is a probe's result and why (types.probe-result).
type ProbeResult struct {
	Outcome ProbeOutcome
	Message string
}

// Succeeded, Failed and Undecided build a ProbeResult.
func Succeeded(message string) ProbeResult { return ProbeResult{Success, message} }
func Failed(message string) ProbeResult    { return ProbeResult{Failure, message} }
func Undecided(message string) ProbeResult { return ProbeResult{Unknown, message} }

// AdmissionContainer is one container of a pod under admission.
type AdmissionContainer struct {
	Name             string
	IsInit           bool
	HasCPURequest    bool
	HasMemoryRequest bool
	HasCPULimit      bool
	HasMemoryLimit   bool
}

// AdmissionPod is the pod being admitted; Index (always 0) is its pod-meta index.
type AdmissionPod struct {
	Index      uint32
	Priority   int32
	Qos        QosClass
	IsStatic   bool
	IsCritical bool
	Containers []AdmissionContainer
}
