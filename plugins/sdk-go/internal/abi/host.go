//go:build wasip1

package abi

import (
	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/wit"
)

// Host answers plugin.Log and plugin.NowUnixMs through the component's imports.
type Host struct{}

func (Host) Log(level plugin.LogLevel, message string, fields []plugin.Field) {
	pairs := make([]wit.Tuple2[string, string], len(fields))
	for i, f := range fields {
		pairs[i] = wit.Tuple2[string, string]{F0: f.Key, F1: f.Value}
	}
	wit.HostLog(wit.LogLevel(level), message, pairs)
}

func (Host) NowUnixMs() uint64 { return wit.HostNowUnixMs() }
