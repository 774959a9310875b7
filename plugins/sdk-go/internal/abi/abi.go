//go:build wasip1

// Package abi joins the generated bindings (internal/wit, from wit/ by
// plugins/go-bindgen) to the plugin package: the host, pod-meta and pod-access
// imports behind plugin's interfaces, and what every world's exports share.
package abi

import (
	"errors"
	"fmt"
	"runtime/debug"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/cabi"
)

// Plugin is the registered plugin; a world package's Export sets it.
var Plugin plugin.Base

// ErrNoPlugin answers an export when no plugin was registered.
var ErrNoPlugin = errors.New("no plugin registered: call the world package's Export in init()")

// Base answers configure and self-check, which every world exports, with Plugin.
type Base struct{}

func (Base) Configure(config string) error {
	if Plugin == nil {
		return ErrNoPlugin
	}
	return Plugin.Configure(config)
}

func (Base) SelfCheck() error {
	if Plugin == nil {
		return ErrNoPlugin
	}
	return Plugin.SelfCheck()
}

func init() {
	plugin.UseHost(Host{})
	// A panic is logged through host.log before the instance traps (the host
	// then rebuilds it), as the Rust SDK does.
	cabi.PanicHook = func(r any) {
		plugin.Log(plugin.Error, fmt.Sprintf("plugin panicked: %v", r), plugin.Field{Key: "stack", Value: string(debug.Stack())})
	}
}
