//go:build wasip1

package abi

import (
	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/wit"
)

// NodeInfo is the plugin package's form of the node record.
func NodeInfo(node wit.NodeInfo) plugin.NodeInfo {
	return plugin.NodeInfo{
		MemoryCapacityBytes: node.MemoryCapacityBytes, MemoryAllocatableBytes: node.MemoryAllocatableBytes,
		CPUCapacityMillis: node.CpuCapacityMillis, CPUAllocatableMillis: node.CpuAllocatableMillis,
		PodsCapacity: node.PodsCapacity, PodCount: node.PodCount, PidCapacity: node.PidCapacity,
		NodefsCapacityBytes: node.NodefsCapacityBytes, ImagefsCapacityBytes: node.ImagefsCapacityBytes,
	}
}

// Rank answers the eviction world's rank (in eviction-policy and
// pressure-eviction-policy) with p.
func Rank(p plugin.EvictionPolicy, node wit.NodeInfo, pressure []wit.SignalObservation, pods []uint64) ([]uint32, error) {
	info := NodeInfo(node)
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
	return p.Rank(&info, observations, infos)
}
