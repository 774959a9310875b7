//go:build wasip1

package hooks

import (
	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/abi"
	"wasmlet.dev/plugin/internal/wit"
	"wasmlet.dev/plugin/internal/wit/lifecyclehooks"
)

func export(p plugin.LifecycleHooks) {
	abi.Plugin = p
	plugin.UseMeta(abi.Meta{})
}

// exports answers the world's exports (internal/wit/lifecyclehooks) with the
// registered plugin.
type exports struct{ abi.Base }

func (exports) Admit(pod wit.AdmissionPod) error {
	if registered == nil {
		return abi.ErrNoPlugin
	}
	admission := plugin.AdmissionPod{
		Index: pod.Index, Priority: pod.Priority, Qos: plugin.QosClass(pod.Qos),
		IsStatic: pod.IsStatic, IsCritical: pod.IsCritical,
		Containers: make([]plugin.AdmissionContainer, len(pod.Containers)),
	}
	for i, c := range pod.Containers {
		admission.Containers[i] = plugin.AdmissionContainer{
			Name: c.Name, IsInit: c.IsInit,
			HasCPURequest: c.HasCpuRequest, HasMemoryRequest: c.HasMemoryRequest,
			HasCPULimit: c.HasCpuLimit, HasMemoryLimit: c.HasMemoryLimit,
		}
	}
	return registered.Admit(&admission)
}

func (exports) PostStart(container string) error {
	if registered == nil {
		return abi.ErrNoPlugin
	}
	return registered.PostStart(container, abi.Access{})
}

func (exports) PreStop(container string, graceMs uint32) error {
	if registered == nil {
		return abi.ErrNoPlugin
	}
	return registered.PreStop(container, graceMs, abi.Access{})
}

func init() { lifecyclehooks.Impl = exports{} }
