//go:build !wasip1

package probe

import "wasmlet.dev/plugin"

func export(plugin.ProbeHandler) {}
