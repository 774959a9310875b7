package main

import (
	"slices"
	"testing"

	"wasmlet.dev/plugin/plugintest"
)

func TestFlappyPodsGoFirst(t *testing.T) {
	c := plugintest.MemoryPressure().Pod(
		plugintest.NewPod("default", "calm"),
		plugintest.NewPod("default", "flappy").Restarts(9),
		plugintest.NewPod("kube-system", "static").Static(),
	)
	got, err := c.RankNames(&@TYPE@{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"default/flappy", "default/calm"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
