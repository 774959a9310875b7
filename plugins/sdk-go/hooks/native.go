//go:build !wasip1

package hooks

import "wasmlet.dev/plugin"

func export(plugin.LifecycleHooks) {}
