//go:build wasip1

package pressure

import (
	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/abi"
	"wasmlet.dev/plugin/internal/wit"
	"wasmlet.dev/plugin/internal/wit/pressureevictionpolicy"
)

func export(p plugin.PressureEvictionPolicy) {
	abi.Plugin = p
	plugin.UseMeta(abi.Meta{})
}

// exports answers the world's exports (internal/wit/pressureevictionpolicy)
// with the registered plugin.
type exports struct{ abi.Base }

func (exports) Rank(node wit.NodeInfo, pressure []wit.SignalObservation, pods []uint64) ([]uint32, error) {
	if registered == nil {
		return nil, abi.ErrNoPlugin
	}
	return abi.Rank(registered, node, pressure, pods)
}

func (exports) PressureWatchWatch(node wit.NodeInfo, psi wit.NodePsi, pods []uint64) (*wit.EvictNow, error) {
	if registered == nil {
		return nil, abi.ErrNoPlugin
	}
	info := abi.NodeInfo(node)
	infos, err := plugin.UnpackPods(pods)
	if err != nil {
		return nil, err
	}
	reading := plugin.NodePSI{
		CPU: resource(psi.Cpu), Memory: resource(psi.Memory), IO: resource(psi.Io), ReadUnixMs: psi.ReadUnixMs,
	}
	asked, err := registered.Watch(&info, &reading, infos)
	if asked == nil || err != nil {
		return nil, err
	}
	return &wit.EvictNow{Pods: asked.Pods, Reason: asked.Reason}, nil
}

func resource(r wit.PsiResource) plugin.PSIResource {
	return plugin.PSIResource{Some: plugin.PSILine(r.Some), Full: plugin.PSILine(r.Full)}
}

func init() { pressureevictionpolicy.Impl = exports{} }
