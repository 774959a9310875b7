//go:build wasip1

package abi

import (
	"runtime"
	"unsafe"

	"wasmlet.dev/plugin"
)

//go:wasmimport wasmlet:plugin/host@0.1.2 log
func hostLog(level, msgPtr, msgLen, fieldsPtr, fieldsLen uint32)

//go:wasmimport wasmlet:plugin/host@0.1.2 now-unix-ms
func hostNow() int64

// Host answers plugin.Log and plugin.NowUnixMs through the component's imports.
type Host struct{}

func (Host) Log(level plugin.LogLevel, message string, fields []plugin.Field) {
	flat := make([]uint32, 0, 4*len(fields))
	for _, f := range fields {
		kp, kn := stringArg(f.Key)
		vp, vn := stringArg(f.Value)
		flat = append(flat, kp, kn, vp, vn)
	}
	mp, mn := stringArg(message)
	var fp uint32
	if len(flat) > 0 {
		fp = addr(unsafe.Pointer(&flat[0]))
	}
	hostLog(uint32(level), mp, mn, fp, uint32(len(fields)))
	runtime.KeepAlive(message)
	runtime.KeepAlive(fields)
	runtime.KeepAlive(flat)
}

func (Host) NowUnixMs() uint64 { return uint64(hostNow()) }

// stringArg is (ptr, len) of s for an import call; the caller keeps s alive.
func stringArg(s string) (uint32, uint32) {
	if len(s) == 0 {
		return 1, 0
	}
	return addr(unsafe.Pointer(unsafe.StringData(s))), uint32(len(s))
}

func init() { plugin.UseHost(Host{}) }
