//go:build wasip1

package eviction

import (
	"fmt"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/abi"
)

func export(p plugin.EvictionPolicy) {
	abi.Plugin = p
	plugin.UseMeta(abi.Meta{})
}

// rank is the lowered export: node-info flattened, then (ptr, len) of pressure
// (signal-observation: 32 bytes, signal at 0, available 8, capacity 16,
// threshold 24) and of the packed pods.
//
//go:wasmexport rank
func rank(memCap, memAlloc, cpuCap, cpuAlloc int64, podsCap, podCount int32, pidCap, nodefsCap, imagefsCap int64,
	pressPtr, pressLen, podsPtr, podsLen uint32) uint32 {
	defer abi.Guard()
	abi.Begin()
	defer abi.End()
	node := plugin.NodeInfo{
		MemoryCapacityBytes: uint64(memCap), MemoryAllocatableBytes: uint64(memAlloc),
		CPUCapacityMillis: uint64(cpuCap), CPUAllocatableMillis: uint64(cpuAlloc),
		PodsCapacity: uint32(podsCap), PodCount: uint32(podCount), PidCapacity: uint64(pidCap),
		NodefsCapacityBytes: uint64(nodefsCap), ImagefsCapacityBytes: uint64(imagefsCap),
	}
	pressure := make([]plugin.SignalObservation, pressLen)
	for i := range pressure {
		p := pressPtr + 32*uint32(i)
		signal := abi.Load8(p, 0)
		if signal > uint8(plugin.PidAvailable) {
			return abi.ReturnIndices(nil, fmt.Errorf("pressure %d has unknown signal %d", i, signal))
		}
		pressure[i] = plugin.SignalObservation{
			Signal:    plugin.Signal(signal),
			Available: int64(abi.Load64(p, 8)),
			Capacity:  int64(abi.Load64(p, 16)),
			Threshold: int64(abi.Load64(p, 24)),
		}
	}
	pods, err := plugin.UnpackPods(abi.U64s(podsPtr, podsLen))
	if err != nil {
		return abi.ReturnIndices(nil, err)
	}
	if registered == nil {
		return abi.ReturnIndices(nil, fmt.Errorf("no plugin registered"))
	}
	return abi.ReturnIndices(registered.Rank(&node, pressure, pods))
}
