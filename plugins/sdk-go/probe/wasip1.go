//go:build wasip1

package probe

import (
	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/abi"
)

func export(p plugin.ProbeHandler) { abi.Plugin = p }

// check is the lowered export: probe-request flattened (args, timeout-ms,
// pod-ip, ports, containers, container, kind); the result goes to the return area.
//
//go:wasmexport check
func check(argsPtr, argsLen, timeout, ipPtr, ipLen, portsPtr, portsLen, contsPtr, contsLen, contPtr, contLen, kind uint32) uint32 {
	defer abi.Guard()
	abi.Begin()
	defer abi.End()
	if registered == nil {
		return abi.ReturnProbe(plugin.Failed("no plugin registered"))
	}
	req := plugin.ProbeRequest{
		Args:       abi.String(argsPtr, argsLen),
		TimeoutMs:  timeout,
		PodIP:      abi.String(ipPtr, ipLen),
		Ports:      abi.U16s(portsPtr, portsLen),
		Containers: abi.Strings(contsPtr, contsLen),
		Container:  abi.String(contPtr, contLen),
		Kind:       plugin.ProbeKind(kind),
	}
	return abi.ReturnProbe(registered.Check(&req, abi.Access{Probe: true}))
}
