// Package pressure exports a plugin.PressureEvictionPolicy as the
// pressure-eviction-policy world: the eviction world's exports plus
// pressure-watch (contract 0.1.2).
package pressure

import "wasmlet.dev/plugin"

var registered plugin.PressureEvictionPolicy

// Export makes p the plugin this component serves. Call it from init().
func Export(p plugin.PressureEvictionPolicy) {
	registered = p
	export(p)
}
