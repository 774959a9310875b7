// Command @NAME@ is a wasmlet GC strategy: the least recently used images
// first until enough is freed, and every dead container but the newest of each
// container (all of them once the pod is deleted).
package main

import (
	"cmp"
	"slices"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/gc"
)

// @TYPE@ is the strategy.
type @TYPE@ struct{ plugin.NoSelfCheck }

// Configure takes the plugin config (JSON); this strategy has none.
func (*@TYPE@) Configure(config string) error { return plugin.ParseConfig(config, &struct{}{}) }

// PlanImages deletes unused, unpinned images, least recently used first.
func (*@TYPE@) PlanImages(disk *plugin.DiskInfo, images []plugin.ImageInfo) ([]uint32, error) {
	var candidates []uint32
	for i, image := range images {
		if !image.InUse && !image.Pinned {
			candidates = append(candidates, uint32(i))
		}
	}
	slices.SortStableFunc(candidates, func(a, b uint32) int {
		return cmp.Compare(images[a].LastUsedUnixMs, images[b].LastUsedUnixMs)
	})
	var plan []uint32
	var freed uint64
	for _, i := range candidates {
		if freed >= disk.BytesToFree {
			break
		}
		plan = append(plan, i)
		freed += images[i].SizeBytes
	}
	return plan, nil
}

// PlanContainers keeps the newest dead container of each container.
func (*@TYPE@) PlanContainers(dead []plugin.DeadContainer) ([]uint32, error) {
	var plan []uint32
	for i, c := range dead {
		if c.PodDeleted || c.PerContainerRank > 0 {
			plan = append(plan, uint32(i))
		}
	}
	return plan, nil
}

func init() { gc.Export(&@TYPE@{}) }

func main() {}
