//go:build wasip1

package abi

import (
	"errors"
	"fmt"
	"runtime/debug"

	"wasmlet.dev/plugin"
)

// Plugin is the registered plugin; a world package's Export sets it.
var Plugin plugin.Base

var errNoPlugin = errors.New("no plugin registered: call the world package's Export in init()")

// Guard, deferred by every export, logs a panic through host.log before the
// instance traps (the host then rebuilds it), as the Rust SDK does.
func Guard() {
	if r := recover(); r != nil {
		plugin.Log(plugin.Error, fmt.Sprintf("plugin panicked: %v", r), plugin.Field{Key: "stack", Value: string(debug.Stack())})
		panic(r)
	}
}

//go:wasmexport configure
func configure(p, n uint32) uint32 {
	defer Guard()
	Begin()
	defer End()
	if Plugin == nil {
		return ReturnUnit(errNoPlugin)
	}
	return ReturnUnit(Plugin.Configure(String(p, n)))
}

//go:wasmexport self-check
func selfCheck() uint32 {
	defer Guard()
	Begin()
	defer End()
	if Plugin == nil {
		return ReturnUnit(errNoPlugin)
	}
	return ReturnUnit(Plugin.SelfCheck())
}
