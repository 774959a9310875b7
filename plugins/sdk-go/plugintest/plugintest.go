// Package plugintest runs a plugin's logic natively under `go test`, the way
// the host calls the component: it answers the pod-meta functions from the
// case, checks answers as the host does, and records host.log events.
package plugintest

import (
	"fmt"

	"wasmlet.dev/plugin"
)

// Sizes and times for fixtures.
const (
	Mi       uint64 = 1 << 20
	Gi       uint64 = 1 << 30
	MinuteMs uint64 = 60_000
	// NowMs is the fixtures' "now".
	NowMs uint64 = 1_700_000_000_000
)

// Meta is a pod's namespace, name, UID, labels and annotations.
type Meta struct {
	Namespace, Name, UID string
	Labels, Annotations  map[string]string
}

// Key is namespace/name.
func (m *Meta) Key() string { return m.Namespace + "/" + m.Name }

// Pod is a pod for an EvictionCase: its PodInfo and its Meta. It starts as a
// running best-effort pod with stats, one container, priority 0 and no usage.
type Pod struct {
	Info plugin.PodInfo
	Meta Meta
}

// NewPod is a pod in namespace with name.
func NewPod(namespace, name string) *Pod {
	return &Pod{
		Info: plugin.PodInfo{Qos: plugin.BestEffort, HasStats: true, ContainerCount: 1, StartTimeUnixMs: NowMs - 60*MinuteMs},
		Meta: Meta{Namespace: namespace, Name: name, UID: namespace + "-" + name, Labels: map[string]string{}, Annotations: map[string]string{}},
	}
}

func (p *Pod) Priority(v int32) *Pod { p.Info.Priority = v; return p }
func (p *Pod) Critical() *Pod {
	p.Info.IsCritical = true
	p.Info.Priority = max(p.Info.Priority, 2_000_000_000)
	return p
}
func (p *Pod) Static() *Pod  { p.Info.IsStatic, p.Info.IsCritical = true, true; return p }
func (p *Pod) NoStats() *Pod { p.Info.HasStats = false; return p }

// Memory sets the memory request and working set, bytes (a request makes it burstable).
func (p *Pod) Memory(request, usage uint64) *Pod {
	p.Info.MemoryRequestBytes, p.Info.MemoryUsageBytes = request, usage
	if request > 0 && p.Info.Qos == plugin.BestEffort {
		p.Info.Qos = plugin.Burstable
	}
	return p
}
func (p *Pod) Disk(request, usage uint64) *Pod {
	p.Info.DiskRequestBytes, p.Info.DiskUsageBytes = request, usage
	return p
}
func (p *Pod) Inodes(used uint64) *Pod     { p.Info.InodesUsed = used; return p }
func (p *Pod) Processes(n uint64) *Pod     { p.Info.ProcessCount = n; return p }
func (p *Pod) Restarts(n uint32) *Pod      { p.Info.RestartCount = n; return p }
func (p *Pod) Label(k, v string) *Pod      { p.Meta.Labels[k] = v; return p }
func (p *Pod) Annotation(k, v string) *Pod { p.Meta.Annotations[k] = v; return p }

// EvictionCase is one rank call: a node, the thresholds met and the pods.
type EvictionCase struct {
	Node     plugin.NodeInfo
	Pressure []plugin.SignalObservation
	Pods     []*Pod
}

// NewEvictionCase is a 4-core, 8 GiB, 110-pod node with signal's threshold met.
func NewEvictionCase(signal plugin.Signal) *EvictionCase {
	obs := plugin.SignalObservation{Signal: signal}
	switch signal.Pressure() {
	case plugin.MemoryPressure:
		obs.Available, obs.Capacity, obs.Threshold = int64(50*Mi), int64(8*Gi), int64(100*Mi)
	case plugin.PidPressure:
		obs.Available, obs.Capacity, obs.Threshold = 1_000, 32_768, 3_276
	case plugin.DiskPressure:
		obs.Available, obs.Capacity, obs.Threshold = int64(5*Gi), int64(100*Gi), int64(10*Gi)
	default:
		obs.Available, obs.Capacity, obs.Threshold = 10_000, 6_000_000, 300_000
	}
	return &EvictionCase{
		Node: plugin.NodeInfo{
			MemoryCapacityBytes: 8 * Gi, MemoryAllocatableBytes: 8*Gi - 256*Mi,
			CPUCapacityMillis: 4000, CPUAllocatableMillis: 3900, PodsCapacity: 110,
			PidCapacity: 32_768, NodefsCapacityBytes: 100 * Gi,
		},
		Pressure: []plugin.SignalObservation{obs},
	}
}

// MemoryPressure, DiskPressure and PidPressure are the usual cases.
func MemoryPressure() *EvictionCase { return NewEvictionCase(plugin.MemoryAvailable) }
func DiskPressure() *EvictionCase   { return NewEvictionCase(plugin.NodefsAvailable) }
func PidPressure() *EvictionCase    { return NewEvictionCase(plugin.PidAvailable) }

// Pod adds pods.
func (c *EvictionCase) Pod(pods ...*Pod) *EvictionCase { c.Pods = append(c.Pods, pods...); return c }

// Rank calls policy.Rank as the host would (the pods through the packed wire
// form) and returns its raw answer.
func (c *EvictionCase) Rank(policy plugin.EvictionPolicy) ([]uint32, error) {
	var answer []uint32
	err := c.call(func(node *plugin.NodeInfo, pods []plugin.PodInfo) (err error) {
		answer, err = policy.Rank(node, c.Pressure, pods)
		return err
	})
	return answer, err
}

// Watch calls policy.Watch as the host would, with the case's pods and the
// reading psi, and checks the pods it asks for as the host does (an index out of
// range or listed twice is an error).
func (c *EvictionCase) Watch(policy plugin.PressureEvictionPolicy, psi *plugin.NodePSI) (*plugin.EvictNow, error) {
	var asked *plugin.EvictNow
	err := c.call(func(node *plugin.NodeInfo, pods []plugin.PodInfo) (err error) {
		asked, err = policy.Watch(node, psi, pods)
		return err
	})
	if err != nil || asked == nil {
		return nil, err
	}
	return asked, CheckIndices(asked.Pods, len(c.Pods), "pod")
}

// call runs one policy call as the host makes it: the pods through the packed
// wire form, pod-meta answering for them during the call.
func (c *EvictionCase) call(f func(node *plugin.NodeInfo, pods []plugin.PodInfo) error) error {
	node := c.Node
	node.PodCount = uint32(len(c.Pods))
	infos := make([]plugin.PodInfo, len(c.Pods))
	metas := make([]Meta, len(c.Pods))
	for i, p := range c.Pods {
		infos[i], metas[i] = p.Info, p.Meta
	}
	pods, err := plugin.UnpackPods(plugin.PackPods(infos, nil))
	if err != nil {
		return err
	}
	defer plugin.UseMeta(plugin.UseMeta(Snapshot{Pods: metas}))
	return f(&node, pods)
}

// MemoryPSI is a node reading at readUnixMs with memory some and full avg10 at
// the given percentages (the other fields zero).
func MemoryPSI(readUnixMs uint64, somePercent, fullPercent float64) *plugin.NodePSI {
	psi := &plugin.NodePSI{ReadUnixMs: readUnixMs}
	psi.Memory.Some.Avg10 = uint32(somePercent * 100)
	psi.Memory.Full.Avg10 = uint32(fullPercent * 100)
	return psi
}

// RankNames calls Rank, checks the answer as the host does and names the pods
// (namespace/name). An index out of range or listed twice, or a critical or
// static pod, is an error here.
func (c *EvictionCase) RankNames(policy plugin.EvictionPolicy) ([]string, error) {
	answer, err := c.Rank(policy)
	if err != nil {
		return nil, err
	}
	if err := CheckIndices(answer, len(c.Pods), "pod"); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(answer))
	for _, i := range answer {
		p := c.Pods[i]
		if !p.Info.IsEvictable() {
			return nil, fmt.Errorf("proposes critical or static pod %s", p.Meta.Key())
		}
		names = append(names, p.Meta.Key())
	}
	return names, nil
}

// CheckIndices refuses an answer the host would ignore as nonsense.
func CheckIndices(answer []uint32, n int, what string) error {
	seen := make(map[uint32]bool, len(answer))
	for _, i := range answer {
		if int(i) >= n {
			return fmt.Errorf("%s index %d out of range (%d %ss)", what, i, n, what)
		}
		if seen[i] {
			return fmt.Errorf("%s index %d listed twice", what, i)
		}
		seen[i] = true
	}
	return nil
}

// Snapshot answers pod-meta from a list of pods (and image tags).
type Snapshot struct {
	Pods []Meta
	Tags [][]string
}

func (s Snapshot) pod(i uint32) *Meta {
	if int(i) < len(s.Pods) {
		return &s.Pods[i]
	}
	return &Meta{}
}

func (s Snapshot) PodNamespace(i uint32) string { return s.pod(i).Namespace }
func (s Snapshot) PodName(i uint32) string      { return s.pod(i).Name }
func (s Snapshot) PodUID(i uint32) string       { return s.pod(i).UID }
func (s Snapshot) PodLabel(i uint32, k string) (string, bool) {
	v, ok := s.pod(i).Labels[k]
	return v, ok
}
func (s Snapshot) PodAnnotation(i uint32, k string) (string, bool) {
	v, ok := s.pod(i).Annotations[k]
	return v, ok
}
func (s Snapshot) ImageTags(i uint32) []string {
	if int(i) < len(s.Tags) {
		return s.Tags[i]
	}
	return nil
}
