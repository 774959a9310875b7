package main

import (
	"slices"
	"testing"

	"wasmlet.dev/plugin/plugintest"
)

func policy(t *testing.T, config string) *BatchFirst {
	p := New()
	if err := p.Configure(config); err != nil {
		t.Fatal(err)
	}
	return p
}

func batchCase() *plugintest.EvictionCase {
	mi := plugintest.Mi
	return plugintest.MemoryPressure().Pod(
		plugintest.NewPod("web", "frontend").Memory(0, 800*mi),
		plugintest.NewPod("jobs", "report").Memory(0, 100*mi).Label("workload-class", "batch"),
		plugintest.NewPod("infra", "dns").Memory(0, 900*mi),
		plugintest.NewPod("jobs", "etl").Memory(0, 300*mi).Label("workload-class", "batch"),
		plugintest.NewPod("jobs", "service").Memory(0, 50*mi).Label("workload-class", "service"),
	)
}

func rankNames(t *testing.T, c *plugintest.EvictionCase, p *BatchFirst, want ...string) {
	t.Helper()
	got, err := c.RankNames(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestBatchFirstInUpstreamOrderThenTheRestWithoutProtected(t *testing.T) {
	rankNames(t, batchCase(), policy(t, `{"protectNamespaces": ["infra"]}`),
		"jobs/etl", "jobs/report", "web/frontend", "jobs/service")
}

func TestCustomLabel(t *testing.T) {
	c := batchCase().Pod(plugintest.NewPod("x", "cheap").Memory(0, plugintest.Mi).Label("tier", "low"))
	got, err := c.RankNames(policy(t, `{"batchLabel": "tier", "batchValue": "low"}`))
	if err != nil || got[0] != "x/cheap" {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestNoConfigIsUpstreamWithBatchFirst(t *testing.T) {
	rankNames(t, batchCase(), policy(t, ""),
		"jobs/etl", "jobs/report", "infra/dns", "web/frontend", "jobs/service")
}

func TestCriticalAndStaticPodsAreLeftOut(t *testing.T) {
	c := batchCase().Pod(
		plugintest.NewPod("kube-system", "etcd").Static().Label("workload-class", "batch"),
		plugintest.NewPod("kube-system", "dns").Critical(),
	)
	if _, err := c.RankNames(policy(t, "")); err != nil {
		t.Fatal(err)
	}
}

func TestBadConfigIsRefused(t *testing.T) {
	p := New()
	for _, config := range []string{`{"protectNamespaces": "kube-system"}`, `{"batchLabel": ""}`, `{"protect": 1}`} {
		if p.Configure(config) == nil {
			t.Errorf("%s accepted", config)
		}
	}
}
