//go:build wasip1

package abi

import (
	"errors"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/internal/wit"
)

// Access is plugin.PodAccess through the imports. In a probe, Sleep answers an
// error without calling the host (Probe true).
type Access struct{ Probe bool }

var errProbeSleep = errors.New("sleep is for hooks: a probe returns and lets the next period run")

func (a Access) HTTPGet(port uint16, path string, headers []plugin.Header, timeoutMs uint32) (*plugin.HTTPResponse, error) {
	pairs := make([]wit.Tuple2[string, string], len(headers))
	for i, h := range headers {
		pairs[i] = wit.Tuple2[string, string]{F0: h.Name, F1: h.Value}
	}
	got, err := wit.PodAccessHttpGet(port, path, pairs, timeoutMs)
	if err != nil {
		return nil, err
	}
	resp := &plugin.HTTPResponse{Status: got.Status, Body: got.Body}
	if len(got.Headers) > 0 {
		resp.Headers = make([]plugin.Header, len(got.Headers))
		for i, h := range got.Headers {
			resp.Headers[i] = plugin.Header{Name: h.F0, Value: h.F1}
		}
	}
	return resp, nil
}

func (a Access) TCPConnect(port uint16, timeoutMs uint32) error {
	return wit.PodAccessTcpConnect(port, timeoutMs)
}

func (a Access) Exec(container string, command []string, timeoutMs uint32) (*plugin.ExecOutput, error) {
	got, err := wit.PodAccessExec(container, command, timeoutMs)
	if err != nil {
		return nil, err
	}
	return &plugin.ExecOutput{ExitCode: got.ExitCode, Stdout: got.Stdout, Stderr: got.Stderr}, nil
}

func (a Access) Sleep(ms uint32) error {
	if a.Probe {
		return errProbeSleep
	}
	wit.PodAccessSleep(ms)
	return nil
}
