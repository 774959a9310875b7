//go:build !wasip1

package pressure

import "wasmlet.dev/plugin"

func export(plugin.PressureEvictionPolicy) {}
