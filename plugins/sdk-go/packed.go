package plugin

import "fmt"

// PodWords is the number of u64 words per pod in rank's pod list.
const PodWords = 11

// The wire form of rank's pod list (wit/types.wit, pod-info): word 0 packs
// priority (bits 0-31), qos (32-39), is-static (40-47), is-critical (48-55) and
// has-stats (56-63); words 1-8 the quantities; word 9 container-count (0-31)
// and restart-count (32-63); word 10 start-time-unix-ms. The same layout as
// wasmlet_policy_default::packed in Rust.
const (
	qosShift      = 32
	staticShift   = 40
	criticalShift = 48
	hasStatsShift = 56
)

// UnpackPods decodes rank's pod list. An incomplete pod, an unknown QoS or a
// flag that is neither 0 nor 1 is an error naming the pod.
func UnpackPods(words []uint64) ([]PodInfo, error) {
	if len(words)%PodWords != 0 {
		return nil, fmt.Errorf("pod list of %d words is not a multiple of %d", len(words), PodWords)
	}
	pods := make([]PodInfo, len(words)/PodWords)
	for i := range pods {
		w := words[i*PodWords : (i+1)*PodWords]
		qos := (w[0] >> qosShift) & 0xff
		if qos > 2 {
			return nil, fmt.Errorf("pod %d has unknown qos %d", i, qos)
		}
		flag := func(name string, shift uint) (bool, error) {
			switch b := (w[0] >> shift) & 0xff; b {
			case 0:
				return false, nil
			case 1:
				return true, nil
			default:
				return false, fmt.Errorf("pod %d has %s %d (not 0 or 1)", i, name, b)
			}
		}
		p := &pods[i]
		var err error
		if p.IsStatic, err = flag("is-static", staticShift); err != nil {
			return nil, err
		}
		if p.IsCritical, err = flag("is-critical", criticalShift); err != nil {
			return nil, err
		}
		if p.HasStats, err = flag("has-stats", hasStatsShift); err != nil {
			return nil, err
		}
		p.Priority = int32(uint32(w[0]))
		p.Qos = QosClass(qos)
		p.MemoryRequestBytes, p.MemoryUsageBytes = w[1], w[2]
		p.CPURequestMillis, p.CPUUsageMillis = w[3], w[4]
		p.DiskRequestBytes, p.DiskUsageBytes = w[5], w[6]
		p.InodesUsed, p.ProcessCount = w[7], w[8]
		p.ContainerCount, p.RestartCount = uint32(w[9]), uint32(w[9]>>32)
		p.StartTimeUnixMs = w[10]
	}
	return pods, nil
}

// PackPods appends pods to out in the wire form (for tests and fixtures).
func PackPods(pods []PodInfo, out []uint64) []uint64 {
	b := func(v bool) uint64 {
		if v {
			return 1
		}
		return 0
	}
	for _, p := range pods {
		out = append(out,
			uint64(uint32(p.Priority))|uint64(p.Qos)<<qosShift|b(p.IsStatic)<<staticShift|
				b(p.IsCritical)<<criticalShift|b(p.HasStats)<<hasStatsShift,
			p.MemoryRequestBytes, p.MemoryUsageBytes, p.CPURequestMillis, p.CPUUsageMillis,
			p.DiskRequestBytes, p.DiskUsageBytes, p.InodesUsed, p.ProcessCount,
			uint64(p.ContainerCount)|uint64(p.RestartCount)<<32, p.StartTimeUnixMs)
	}
	return out
}
