//go:build !wasip1

package gc

import "wasmlet.dev/plugin"

func export(plugin.GcStrategy) {}
