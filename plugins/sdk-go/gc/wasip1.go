//go:build wasip1

package gc

import (
	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/abi"
	"wasmlet.dev/plugin/internal/wit"
	"wasmlet.dev/plugin/internal/wit/gcstrategy"
)

func export(p plugin.GcStrategy) {
	abi.Plugin = p
	plugin.UseMeta(abi.Meta{})
}

// exports answers the world's exports (internal/wit/gcstrategy) with the
// registered plugin.
type exports struct{ abi.Base }

func (exports) PlanImages(disk wit.DiskInfo, images []wit.ImageInfo) ([]uint32, error) {
	if registered == nil {
		return nil, abi.ErrNoPlugin
	}
	info := plugin.DiskInfo(disk)
	converted := make([]plugin.ImageInfo, len(images))
	for i, image := range images {
		converted[i] = plugin.ImageInfo(image)
	}
	return registered.PlanImages(&info, converted)
}

func (exports) PlanContainers(dead []wit.DeadContainer) ([]uint32, error) {
	if registered == nil {
		return nil, abi.ErrNoPlugin
	}
	converted := make([]plugin.DeadContainer, len(dead))
	for i, container := range dead {
		converted[i] = plugin.DeadContainer(container)
	}
	return registered.PlanContainers(converted)
}

func init() { gcstrategy.Impl = exports{} }
