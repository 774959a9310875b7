// Package hooks exports a plugin.LifecycleHooks as the lifecycle-hooks world.
package hooks

import "wasmlet.dev/plugin"

var registered plugin.LifecycleHooks

// Export makes p the plugin this component serves. Call it from init().
func Export(p plugin.LifecycleHooks) {
	registered = p
	export(p)
}
