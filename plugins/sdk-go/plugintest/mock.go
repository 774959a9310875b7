package plugintest

import (
	"errors"
	"fmt"
	"strings"

	"wasmlet.dev/plugin"
)

// MockPod is a plugin.PodAccess answering from canned responses, recording the
// calls. Unknown targets answer as a refused connection does.
type MockPod struct {
	HTTP  map[string]*plugin.HTTPResponse // "port path"
	Errs  map[string]string               // "port path" -> error
	Open  map[uint16]bool
	Execs map[string]*plugin.ExecOutput // "container cmd args..."
	Calls []string
	// InProbe makes Sleep answer an error, as in the probe-handler world.
	InProbe bool
}

// NewMockPod is a pod with nothing listening.
func NewMockPod() *MockPod {
	return &MockPod{HTTP: map[string]*plugin.HTTPResponse{}, Errs: map[string]string{}, Open: map[uint16]bool{}, Execs: map[string]*plugin.ExecOutput{}}
}

// Serve answers GET port path with status and body.
func (m *MockPod) Serve(port uint16, path string, status uint16, body string) *MockPod {
	m.HTTP[fmt.Sprintf("%d %s", port, path)] = &plugin.HTTPResponse{Status: status, Body: []byte(body)}
	return m
}

// Fail makes GET port path fail with err.
func (m *MockPod) Fail(port uint16, path, err string) *MockPod {
	m.Errs[fmt.Sprintf("%d %s", port, path)] = err
	return m
}

func (m *MockPod) HTTPGet(port uint16, path string, _ []plugin.Header, _ uint32) (*plugin.HTTPResponse, error) {
	key := fmt.Sprintf("%d %s", port, path)
	m.Calls = append(m.Calls, "GET "+key)
	if e, ok := m.Errs[key]; ok {
		return nil, errors.New(e)
	}
	if r, ok := m.HTTP[key]; ok {
		return r, nil
	}
	return nil, errors.New("connection refused")
}

func (m *MockPod) TCPConnect(port uint16, _ uint32) error {
	m.Calls = append(m.Calls, fmt.Sprintf("TCP %d", port))
	if m.Open[port] {
		return nil
	}
	return errors.New("connection refused")
}

func (m *MockPod) Exec(container string, command []string, _ uint32) (*plugin.ExecOutput, error) {
	key := container + " " + strings.Join(command, " ")
	m.Calls = append(m.Calls, "EXEC "+key)
	if out, ok := m.Execs[key]; ok {
		return out, nil
	}
	return nil, fmt.Errorf("container %q not found", container)
}

func (m *MockPod) Sleep(ms uint32) error {
	m.Calls = append(m.Calls, fmt.Sprintf("SLEEP %d", ms))
	if m.InProbe {
		return errors.New("sleep is for hooks: a probe returns and lets the next period run")
	}
	return nil
}

// ProbeCase is one check call.
type ProbeCase struct {
	Request plugin.ProbeRequest
	Pod     *MockPod
}

// NewProbeCase is a readiness probe of container "app" declaring ports, with args.
func NewProbeCase(args string, ports ...uint16) *ProbeCase {
	pod := NewMockPod()
	pod.InProbe = true
	return &ProbeCase{
		Request: plugin.ProbeRequest{Args: args, TimeoutMs: 1000, PodIP: "10.0.0.7", Ports: ports,
			Containers: []string{"app"}, Container: "app", Kind: plugin.Readiness},
		Pod: pod,
	}
}

// Check runs the probe.
func (c *ProbeCase) Check(h plugin.ProbeHandler) plugin.ProbeResult {
	return h.Check(&c.Request, c.Pod)
}
