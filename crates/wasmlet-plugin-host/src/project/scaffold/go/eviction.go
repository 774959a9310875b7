// Command @NAME@ is a wasmlet eviction policy: the pods with the most
// restarts go first.
package main

import (
	"cmp"
	"slices"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/eviction"
)

// @TYPE@ is the policy.
type @TYPE@ struct{ plugin.NoSelfCheck }

// Configure takes the plugin config (JSON); this policy has none.
func (*@TYPE@) Configure(config string) error { return plugin.ParseConfig(config, &struct{}{}) }

// Rank lists the evictable pods, most restarts first.
func (*@TYPE@) Rank(_ *plugin.NodeInfo, _ []plugin.SignalObservation, pods []plugin.PodInfo) ([]uint32, error) {
	var order []uint32
	for i := range pods {
		if pods[i].IsEvictable() {
			order = append(order, uint32(i))
		}
	}
	slices.SortStableFunc(order, func(a, b uint32) int {
		return cmp.Compare(pods[b].RestartCount, pods[a].RestartCount)
	})
	return order, nil
}

func init() { eviction.Export(&@TYPE@{}) }

func main() {}
