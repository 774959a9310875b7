//go:build wasip1

package eviction

import (
	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/abi"
	"wasmlet.dev/plugin/internal/wit"
	"wasmlet.dev/plugin/internal/wit/evictionpolicy"
)

func export(p plugin.EvictionPolicy) {
	abi.Plugin = p
	plugin.UseMeta(abi.Meta{})
}

// exports answers the world's exports (internal/wit/evictionpolicy) with the
// registered plugin.
type exports struct{ abi.Base }

func (exports) Rank(node wit.NodeInfo, pressure []wit.SignalObservation, pods []uint64) ([]uint32, error) {
	if registered == nil {
		return nil, abi.ErrNoPlugin
	}
	return abi.Rank(registered, node, pressure, pods)
}

func init() { evictionpolicy.Impl = exports{} }
