//go:build wasip1

package probe

import (
	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/abi"
	"wasmlet.dev/plugin/internal/wit"
	"wasmlet.dev/plugin/internal/wit/probehandler"
)

func export(p plugin.ProbeHandler) { abi.Plugin = p }

// exports answers the world's exports (internal/wit/probehandler) with the
// registered plugin.
type exports struct{ abi.Base }

func (exports) Check(request wit.ProbeRequest) wit.ProbeResult {
	if registered == nil {
		return wit.ProbeResult{Outcome: wit.ProbeOutcomeFailure, Message: abi.ErrNoPlugin.Error()}
	}
	req := plugin.ProbeRequest{
		Args:       request.Args,
		TimeoutMs:  request.TimeoutMs,
		PodIP:      request.PodIp,
		Ports:      request.Ports,
		Containers: request.Containers,
		Container:  request.Container,
		Kind:       plugin.ProbeKind(request.Kind),
	}
	result := registered.Check(&req, abi.Access{Probe: true})
	return wit.ProbeResult{Outcome: wit.ProbeOutcome(result.Outcome), Message: result.Message}
}

func init() { probehandler.Impl = exports{} }
