package main

import (
	"testing"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/plugintest"
)

func TestHealthz(t *testing.T) {
	c := plugintest.NewProbeCase("", 8080)
	if got := c.Check(&@TYPE@{}); got.Outcome != plugin.Failure {
		t.Fatalf("nothing listening: %+v", got)
	}
	c.Pod.Serve(8080, "/healthz", 200, "ok")
	if got := c.Check(&@TYPE@{}); got.Outcome != plugin.Success {
		t.Fatalf("serving: %+v", got)
	}
}
