//go:build wasip1

package eviction

import (
	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/abi"
	"wasmlet.dev/plugin/internal/wit"
	"wasmlet.dev/plugin/internal/wit/evictionpolicy"
)

func export(p plugin.EvictionPolicy) {
	abi.Plugin = p
	plugin.UseMeta(abi.Meta{})
}

// exports answers the world's exports (internal/wit/evictionpolicy) with the
// registered plugin.
type exports struct{ abi.Base }

func (exports) Rank(node wit.NodeInfo, pressure []wit.SignalObservation, pods []uint64) ([]uint32, error) {
	if registered == nil {
		return nil, abi.ErrNoPlugin
	}
	info := plugin.NodeInfo{
		MemoryCapacityBytes: node.MemoryCapacityBytes, MemoryAllocatableBytes: node.MemoryAllocatableBytes,
		CPUCapacityMillis: node.CpuCapacityMillis, CPUAllocatableMillis: node.CpuAllocatableMillis,
		PodsCapacity: node.PodsCapacity, PodCount: node.PodCount, PidCapacity: node.PidCapacity,
		NodefsCapacityBytes: node.NodefsCapacityBytes, ImagefsCapacityBytes: node.ImagefsCapacityBytes,
	}
	observations := make([]plugin.SignalObservation, len(pressure))
	for i, o := range pressure {
		observations[i] = plugin.SignalObservation{
			Signal: plugin.Signal(o.Signal), Available: o.Available, Capacity: o.Capacity, Threshold: o.Threshold,
		}
	}
	infos, err := plugin.UnpackPods(pods)
	if err != nil {
		return nil, err
	}
	return registered.Rank(&info, observations, infos)
}

func init() { evictionpolicy.Impl = exports{} }
