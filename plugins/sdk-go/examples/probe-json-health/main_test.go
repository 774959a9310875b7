package main

import (
	"slices"
	"strings"
	"testing"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/plugintest"
)

func check(args string, pod *plugintest.MockPod) plugin.ProbeResult {
	c := plugintest.NewProbeCase(args, 8080)
	c.Pod = pod
	return c.Check(New())
}

func TestHealthyDocumentSucceeds(t *testing.T) {
	pod := plugintest.NewMockPod().Serve(8080, "/health", 200, `{"status":"ok"}`)
	if r := check("", pod); r.Outcome != plugin.Success {
		t.Fatal(r)
	}
	if !slices.Equal(pod.Calls, []string{"GET 8080 /health"}) {
		t.Fatal(pod.Calls)
	}
}

func TestNestedFieldAndOtherExpectedValue(t *testing.T) {
	pod := plugintest.NewMockPod().Serve(9000, "/status", 200, `{"checks":{"db":{"up":true}}}`)
	r := check(`{"port": 9000, "path": "/status", "field": "checks.db.up", "expected": true}`, pod)
	if r.Outcome != plugin.Success {
		t.Fatal(r)
	}
}

func TestWrongValueMissingFieldOrBadStatusFail(t *testing.T) {
	pod := plugintest.NewMockPod().
		Serve(8080, "/health", 200, `{"status":"degraded"}`).
		Serve(8080, "/empty", 200, "{}").
		Serve(8080, "/down", 503, `{"status":"ok"}`)
	if r := check("", pod); r.Outcome != plugin.Failure || r.Message != `status is "degraded", expected "ok"` {
		t.Fatal(r)
	}
	if r := check(`{"path": "/empty"}`, pod); r.Outcome != plugin.Failure {
		t.Fatal(r)
	}
	if r := check(`{"path": "/down"}`, pod); r.Outcome != plugin.Failure || !strings.Contains(r.Message, "HTTP 503") {
		t.Fatal(r)
	}
}

func TestNotJSONIsUnknownAndConnectionErrorsFail(t *testing.T) {
	if r := check("", plugintest.NewMockPod().Serve(8080, "/health", 200, "OK")); r.Outcome != plugin.Unknown {
		t.Fatal(r)
	}
	if r := check("", plugintest.NewMockPod()); r.Outcome != plugin.Failure || !strings.Contains(r.Message, "connection refused") {
		t.Fatal(r)
	}
}

func TestNumbersCompareAsInRust(t *testing.T) {
	pod := plugintest.NewMockPod().Serve(8080, "/health", 200, `{"n": 1, "f": 1.0}`)
	for args, want := range map[string]plugin.ProbeOutcome{
		`{"field": "n", "expected": 1}`:   plugin.Success,
		`{"field": "n", "expected": 1.0}`: plugin.Failure,
		`{"field": "f", "expected": 1.0}`: plugin.Success,
	} {
		if r := check(args, pod); r.Outcome != want {
			t.Errorf("%s: %v", args, r)
		}
	}
}

func TestBadArgsOrAmbiguousPortFailWithAReason(t *testing.T) {
	pod := plugintest.NewMockPod()
	if r := check(`{"prot": 1}`, pod); !strings.HasPrefix(r.Message, "invalid probe args") {
		t.Fatal(r)
	}
	c := plugintest.NewProbeCase("", 8080, 9090)
	if r := c.Check(New()); !strings.Contains(r.Message, `need a "port"`) {
		t.Fatal(r)
	}
	if len(pod.Calls)+len(c.Pod.Calls) != 0 {
		t.Fatal(pod.Calls, c.Pod.Calls)
	}
}

func TestPluginConfigSetsDefaults(t *testing.T) {
	p := New()
	if err := p.Configure(`{"path": "/healthz", "field": "state", "expected": "UP"}`); err != nil {
		t.Fatal(err)
	}
	c := plugintest.NewProbeCase("", 8080)
	c.Pod.Serve(8080, "/healthz", 200, `{"state":"UP"}`)
	if r := c.Check(p); r.Outcome != plugin.Success {
		t.Fatal(r)
	}
}
