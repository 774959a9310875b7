//go:build !wasip1

package eviction

import "wasmlet.dev/plugin"

func export(plugin.EvictionPolicy) {}
