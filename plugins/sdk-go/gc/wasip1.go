//go:build wasip1

package gc

import (
	"errors"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/abi"
)

func export(p plugin.GcStrategy) {
	abi.Plugin = p
	plugin.UseMeta(abi.Meta{})
}

var errNoPlugin = errors.New("no plugin registered")

// planImages is the lowered export: disk-info flattened, then the images
// (image-info: 32 bytes, size 0, first-seen 8, last-used 16, in-use 24, pinned 25).
//
//go:wasmexport plan-images
func planImages(capacity, available, toFree, minAge, maxAge int64, imgPtr, imgLen uint32) uint32 {
	defer abi.Guard()
	abi.Begin()
	defer abi.End()
	if registered == nil {
		return abi.ReturnIndices(nil, errNoPlugin)
	}
	disk := plugin.DiskInfo{CapacityBytes: uint64(capacity), AvailableBytes: uint64(available),
		BytesToFree: uint64(toFree), MinAgeMs: uint64(minAge), MaxAgeMs: uint64(maxAge)}
	images := make([]plugin.ImageInfo, imgLen)
	for i := range images {
		p := imgPtr + 32*uint32(i)
		images[i] = plugin.ImageInfo{SizeBytes: abi.Load64(p, 0), FirstSeenUnixMs: abi.Load64(p, 8),
			LastUsedUnixMs: abi.Load64(p, 16), InUse: abi.Load8(p, 24) != 0, Pinned: abi.Load8(p, 25) != 0}
	}
	return abi.ReturnIndices(registered.PlanImages(&disk, images))
}

// planContainers is the lowered export (dead-container: 32 bytes, pod-deleted 0,
// finished 8, per-container-rank 16, unit 20, pod 24).
//
//go:wasmexport plan-containers
func planContainers(ptr, n uint32) uint32 {
	defer abi.Guard()
	abi.Begin()
	defer abi.End()
	if registered == nil {
		return abi.ReturnIndices(nil, errNoPlugin)
	}
	dead := make([]plugin.DeadContainer, n)
	for i := range dead {
		p := ptr + 32*uint32(i)
		dead[i] = plugin.DeadContainer{PodDeleted: abi.Load8(p, 0) != 0, FinishedUnixMs: abi.Load64(p, 8),
			PerContainerRank: abi.Load32(p, 16), Unit: abi.Load32(p, 20), Pod: abi.Load32(p, 24)}
	}
	return abi.ReturnIndices(registered.PlanContainers(dead))
}
