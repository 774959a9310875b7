//go:build wasip1

package abi

import (
	"errors"
	"runtime"
	"unsafe"

	"wasmlet.dev/plugin"
)

//go:wasmimport wasmlet:plugin/pod-access@0.1.2 http-get
func accessHTTPGet(port, pathPtr, pathLen, headersPtr, headersLen, timeout, ret uint32)

//go:wasmimport wasmlet:plugin/pod-access@0.1.2 tcp-connect
func accessTCPConnect(port, timeout, ret uint32)

//go:wasmimport wasmlet:plugin/pod-access@0.1.2 exec
func accessExec(containerPtr, containerLen, commandPtr, commandLen, timeout, ret uint32)

//go:wasmimport wasmlet:plugin/pod-access@0.1.2 sleep
func accessSleep(ms uint32)

// Access is plugin.PodAccess through the imports. In a probe, Sleep answers an
// error without calling the host (Probe true).
type Access struct{ Probe bool }

var errProbeSleep = errors.New("sleep is for hooks: a probe returns and lets the next period run")

func (a Access) HTTPGet(port uint16, path string, headers []plugin.Header, timeoutMs uint32) (*plugin.HTTPResponse, error) {
	flat := make([]uint32, 0, 4*len(headers))
	for _, h := range headers {
		np, nn := stringArg(h.Name)
		vp, vn := stringArg(h.Value)
		flat = append(flat, np, nn, vp, vn)
	}
	var hp uint32
	if len(flat) > 0 {
		hp = addr(unsafe.Pointer(&flat[0]))
	}
	pp, pn := stringArg(path)
	var r [6]uint32
	accessHTTPGet(uint32(port), pp, pn, hp, uint32(len(headers)), timeoutMs, addr(unsafe.Pointer(&r[0])))
	runtime.KeepAlive(path)
	runtime.KeepAlive(headers)
	runtime.KeepAlive(flat)
	if uint8(r[0]) != 0 {
		return nil, errors.New(String(r[1], r[2]))
	}
	resp := &plugin.HTTPResponse{Status: uint16(r[1]), Body: Bytes(r[4], r[5])}
	if r[3] > 0 {
		words := unsafe.Slice((*uint32)(ptr(r[2])), 4*r[3])
		resp.Headers = make([]plugin.Header, r[3])
		for i := range resp.Headers {
			resp.Headers[i] = plugin.Header{Name: String(words[4*i], words[4*i+1]), Value: String(words[4*i+2], words[4*i+3])}
		}
	}
	return resp, nil
}

func (a Access) TCPConnect(port uint16, timeoutMs uint32) error {
	var r [3]uint32
	accessTCPConnect(uint32(port), timeoutMs, addr(unsafe.Pointer(&r[0])))
	if uint8(r[0]) != 0 {
		return errors.New(String(r[1], r[2]))
	}
	return nil
}

func (a Access) Exec(container string, command []string, timeoutMs uint32) (*plugin.ExecOutput, error) {
	flat := make([]uint32, 0, 2*len(command))
	for _, c := range command {
		p, n := stringArg(c)
		flat = append(flat, p, n)
	}
	var fp uint32
	if len(flat) > 0 {
		fp = addr(unsafe.Pointer(&flat[0]))
	}
	cp, cn := stringArg(container)
	var r [6]uint32
	accessExec(cp, cn, fp, uint32(len(command)), timeoutMs, addr(unsafe.Pointer(&r[0])))
	runtime.KeepAlive(container)
	runtime.KeepAlive(command)
	runtime.KeepAlive(flat)
	if uint8(r[0]) != 0 {
		return nil, errors.New(String(r[1], r[2]))
	}
	return &plugin.ExecOutput{ExitCode: int32(r[1]), Stdout: Bytes(r[2], r[3]), Stderr: Bytes(r[4], r[5])}, nil
}

func (a Access) Sleep(ms uint32) error {
	if a.Probe {
		return errProbeSleep
	}
	accessSleep(ms)
	return nil
}
