//go:build wasip1

package hooks

import (
	"errors"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/abi"
)

func export(p plugin.LifecycleHooks) {
	abi.Plugin = p
	plugin.UseMeta(abi.Meta{})
}

var errNoPlugin = errors.New("no plugin registered")

// admit is the lowered export: admission-pod flattened (index, priority, qos,
// is-static, is-critical, containers); admission-container is 16 bytes: name
// (ptr 0, len 4), is-init 8, has-cpu-request 9, has-memory-request 10,
// has-cpu-limit 11, has-memory-limit 12.
//
//go:wasmexport admit
func admit(index uint32, priority int32, qos, isStatic, isCritical, cPtr, cLen uint32) uint32 {
	defer abi.Guard()
	abi.Begin()
	defer abi.End()
	if registered == nil {
		return abi.ReturnUnit(errNoPlugin)
	}
	pod := plugin.AdmissionPod{Index: index, Priority: priority, Qos: plugin.QosClass(qos),
		IsStatic: isStatic != 0, IsCritical: isCritical != 0, Containers: make([]plugin.AdmissionContainer, cLen)}
	for i := range pod.Containers {
		p := cPtr + 16*uint32(i)
		pod.Containers[i] = plugin.AdmissionContainer{
			Name: abi.String(abi.Load32(p, 0), abi.Load32(p, 4)), IsInit: abi.Load8(p, 8) != 0,
			HasCPURequest: abi.Load8(p, 9) != 0, HasMemoryRequest: abi.Load8(p, 10) != 0,
			HasCPULimit: abi.Load8(p, 11) != 0, HasMemoryLimit: abi.Load8(p, 12) != 0,
		}
	}
	return abi.ReturnUnit(registered.Admit(&pod))
}

//go:wasmexport post-start
func postStart(p, n uint32) uint32 {
	defer abi.Guard()
	abi.Begin()
	defer abi.End()
	if registered == nil {
		return abi.ReturnUnit(errNoPlugin)
	}
	return abi.ReturnUnit(registered.PostStart(abi.String(p, n), abi.Access{}))
}

//go:wasmexport pre-stop
func preStop(p, n, graceMs uint32) uint32 {
	defer abi.Guard()
	abi.Begin()
	defer abi.End()
	if registered == nil {
		return abi.ReturnUnit(errNoPlugin)
	}
	return abi.ReturnUnit(registered.PreStop(abi.String(p, n), graceMs, abi.Access{}))
}
