package main

import (
	"slices"
	"strings"
	"testing"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/plugintest"
)

func guard(t *testing.T, config string) *PsiGuard {
	t.Helper()
	g := New()
	if err := g.Configure(config); err != nil {
		t.Fatal(err)
	}
	return g
}

func pod(name string, priority int32, request, usage uint64) *plugintest.Pod {
	return plugintest.NewPod("default", name).Priority(priority).Memory(request, usage)
}

func watch(t *testing.T, c *plugintest.EvictionCase, g *PsiGuard, psi *plugin.NodePSI) *plugin.EvictNow {
	t.Helper()
	asked, err := c.Watch(g, psi)
	if err != nil {
		t.Fatal(err)
	}
	return asked
}

func TestAsksOnlyAfterPressureHeldForTheConfiguredTime(t *testing.T) {
	g := guard(t, `{"memoryFullAvg10Percent": 20, "forSeconds": 10}`)
	c := plugintest.MemoryPressure().Pod(pod("within", 0, 100, 50), pod("above", 0, 100, 900))
	if asked := watch(t, c, g, plugintest.MemoryPSI(0, 0, 25)); asked != nil {
		t.Fatalf("asked at once: %v", asked)
	}
	if asked := watch(t, c, g, plugintest.MemoryPSI(9_999, 0, 30)); asked != nil {
		t.Fatalf("asked before 10 s: %v", asked)
	}
	asked := watch(t, c, g, plugintest.MemoryPSI(10_000, 0, 30))
	if asked == nil || !slices.Equal(asked.Pods, []uint32{1}) {
		t.Fatalf("want only the pod above its request after 10 s, got %v", asked)
	}
	if !strings.Contains(asked.Reason, "30.00% at or over 20% for 10 s") {
		t.Fatal(asked.Reason)
	}
	// Counting starts again after a request.
	if asked := watch(t, c, g, plugintest.MemoryPSI(15_000, 0, 30)); asked != nil {
		t.Fatalf("asked again within forSeconds: %v", asked)
	}
}

func TestADipBelowTheLimitStartsTheCountAgain(t *testing.T) {
	g := guard(t, `{"memoryFullAvg10Percent": 20, "forSeconds": 10}`)
	c := plugintest.MemoryPressure().Pod(pod("a", 0, 0, 100))
	for _, r := range []struct {
		ms   uint64
		full float64
	}{{0, 50}, {5_000, 19}, {12_000, 50}} {
		if asked := watch(t, c, g, plugintest.MemoryPSI(r.ms, 0, r.full)); asked != nil {
			t.Fatalf("at %d ms: %v", r.ms, asked)
		}
	}
	if watch(t, c, g, plugintest.MemoryPSI(22_000, 0, 50)) == nil {
		t.Fatal("10 s over the limit since the dip should ask")
	}
}

func TestLowestPriorityFirstThenMostAboveRequest(t *testing.T) {
	pods := []plugin.PodInfo{
		{Priority: 100, HasStats: true, MemoryUsageBytes: 5_000},
		{HasStats: true, MemoryRequestBytes: 100, MemoryUsageBytes: 300},
		{HasStats: true, MemoryRequestBytes: 100, MemoryUsageBytes: 2_000},
		{Priority: -10, HasStats: true, IsCritical: true, MemoryUsageBytes: 10_000},
		{Priority: -5, HasStats: true, MemoryRequestBytes: 1_000, MemoryUsageBytes: 900},
	}
	// The critical pod and the one within its request are left out.
	if got := Candidates(pods); !slices.Equal(got, []uint32{2, 1, 0}) {
		t.Fatal(got)
	}
}

func TestConfigIsCheckedAndSelfCheckPasses(t *testing.T) {
	g := New()
	for _, bad := range []string{`{"memoryFullAvg10Percent": 0}`, `{"memoryFullAvg10Percent": 101}`} {
		if g.Configure(bad) == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
	if err := g.Configure(`{"limit": 1}`); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Fatal(err)
	}
	err := g.Configure(`{"memorySomeAvg10Percent": 0}`)
	if err == nil || !strings.Contains(err.Error(), "memorySomeAvg10Percent must be in (0, 100], got 0") {
		t.Fatal(err)
	}
	for _, config := range []string{"{}", `{"forSeconds": 0}`, `{"memoryFullAvg10Percent": 33.33}`} {
		if err := guard(t, config).SelfCheck(); err != nil {
			t.Fatalf("%s: %v", config, err)
		}
	}
}

func TestSomeTriggersOnlyWhenConfiguredAndNamesItself(t *testing.T) {
	c := plugintest.MemoryPressure().Pod(pod("a", 0, 0, 100))
	fullOnly := guard(t, `{"memoryFullAvg10Percent": 20, "forSeconds": 0}`)
	if asked := watch(t, c, fullOnly, plugintest.MemoryPSI(0, 90, 0)); asked != nil {
		t.Fatalf("some asked without a some limit: %v", asked)
	}
	g := guard(t, `{"memoryFullAvg10Percent": 20, "memorySomeAvg10Percent": 15, "forSeconds": 5}`)
	if asked := watch(t, c, g, plugintest.MemoryPSI(0, 16, 0)); asked != nil {
		t.Fatalf("asked at once: %v", asked)
	}
	asked := watch(t, c, g, plugintest.MemoryPSI(5_000, 18, 0))
	if asked == nil || asked.Reason != "memory some avg10 18.00% at or over 15% for 5 s" {
		t.Fatalf("%+v", asked)
	}
	// Full over its limit names full, whatever some reads.
	g = guard(t, `{"memoryFullAvg10Percent": 20, "memorySomeAvg10Percent": 15, "forSeconds": 0}`)
	asked = watch(t, c, g, plugintest.MemoryPSI(0, 40, 30))
	if asked == nil || !strings.HasPrefix(asked.Reason, "memory full avg10 30.00%") {
		t.Fatalf("%+v", asked)
	}
}

func TestRanksAsUpstreamUnderAThreshold(t *testing.T) {
	c := plugintest.MemoryPressure().Pod(pod("small", 0, 0, 10), pod("big", 0, 0, 1_000))
	got, err := c.RankNames(New())
	if err != nil || !slices.Equal(got, []string{"default/big", "default/small"}) {
		t.Fatal(got, err)
	}
}
