// Package probe exports a plugin.ProbeHandler as the probe-handler world.
package probe

import "wasmlet.dev/plugin"

var registered plugin.ProbeHandler

// Export makes p the plugin this component serves. Call it from init().
func Export(p plugin.ProbeHandler) {
	registered = p
	export(p)
}
