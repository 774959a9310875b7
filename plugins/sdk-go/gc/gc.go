// Package gc exports a plugin.GcStrategy as the gc-strategy world.
package gc

import "wasmlet.dev/plugin"

var registered plugin.GcStrategy

// Export makes p the plugin this component serves. Call it from init().
func Export(p plugin.GcStrategy) {
	registered = p
	export(p)
}
