// Package eviction exports a plugin.EvictionPolicy as the eviction-policy world.
package eviction

import "wasmlet.dev/plugin"

var registered plugin.EvictionPolicy

// Export makes p the plugin this component serves. Call it from init().
func Export(p plugin.EvictionPolicy) {
	registered = p
	export(p)
}
