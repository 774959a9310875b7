// Command eviction-psi-guard evicts before the node thrashes (world
// pressure-eviction-policy): the Go twin of plugins/eviction-psi-guard, with the
// same decisions. When node memory full avg10 stays at or over
// memoryFullAvg10Percent for forSeconds (or, when memorySomeAvg10Percent is
// set, memory some avg10 stays at or over that), it asks to evict the
// lowest-priority pod using the most memory above its request; under a
// threshold it ranks as upstream.
//
// Config: {"memoryFullAvg10Percent": 60, "forSeconds": 30}, optionally
// "memorySomeAvg10Percent".
package main

import (
	"fmt"
	"slices"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/pressure"
)

type config struct {
	MemoryFullAvg10Percent float64  `json:"memoryFullAvg10Percent"`
	ForSeconds             uint64   `json:"forSeconds"`
	MemorySomeAvg10Percent *float64 `json:"memorySomeAvg10Percent"`
}

// PsiGuard is the policy, with when pressure was first seen over the limit.
type PsiGuard struct {
	config config
	// over: the last reading was over the limit; overSinceMs is ReadUnixMs of
	// the first reading of that run over it.
	over        bool
	overSinceMs uint64
}

// New is the policy with the default config (systemd-oomd's defaults).
func New() *PsiGuard {
	return &PsiGuard{config: config{MemoryFullAvg10Percent: 60, ForSeconds: 30}}
}

func (g *PsiGuard) Configure(text string) error {
	c := New().config
	if err := plugin.ParseConfig(text, &c); err != nil {
		return err
	}
	limits := []struct {
		field string
		limit *float64
	}{{"memoryFullAvg10Percent", &c.MemoryFullAvg10Percent}, {"memorySomeAvg10Percent", c.MemorySomeAvg10Percent}}
	for _, l := range limits {
		if l.limit != nil && !(*l.limit > 0 && *l.limit <= 100) {
			return fmt.Errorf("%s must be in (0, 100], got %g", l.field, *l.limit)
		}
	}
	g.config, g.over = c, false
	return nil
}

// SelfCheck: pressure held for forSeconds asks to evict the pod most over its
// request, and not before.
func (g *PsiGuard) SelfCheck() error {
	probe := &PsiGuard{config: g.config}
	pods := []plugin.PodInfo{{HasStats: true, MemoryUsageBytes: 10}, {HasStats: true, MemoryUsageBytes: 500}}
	at := func(ms uint64) *plugin.NodePSI {
		psi := &plugin.NodePSI{ReadUnixMs: ms}
		psi.Memory.Full.Avg10 = uint32(g.config.MemoryFullAvg10Percent*100 + 0.999999)
		return psi
	}
	node := &plugin.NodeInfo{}
	first, err := probe.Watch(node, at(1_000), pods)
	if err != nil {
		return err
	}
	later, err := probe.Watch(node, at(1_000+g.config.ForSeconds*1000), pods)
	if err != nil {
		return err
	}
	// With forSeconds 0 the first reading over the limit asks at once.
	asksAtOnce := g.config.ForSeconds == 0
	if later == nil || (first != nil) != asksAtOnce || !slices.Equal(later.Pods, []uint32{1, 0}) {
		return fmt.Errorf("expected an eviction of [1 0] after forSeconds (and not before), got %v then %v", first, later)
	}
	return nil
}

func (g *PsiGuard) Rank(_ *plugin.NodeInfo, pressure []plugin.SignalObservation, pods []plugin.PodInfo) ([]uint32, error) {
	return plugin.DefaultRank(pressure, pods), nil
}

// excess is the memory above the request; 0 for a pod within it.
func excess(p *plugin.PodInfo) uint64 {
	if p.MemoryUsageBytes > p.MemoryRequestBytes {
		return p.MemoryUsageBytes - p.MemoryRequestBytes
	}
	return 0
}

// Candidates are the evictable pods above their request: lowest priority
// first, then the most above it.
func Candidates(pods []plugin.PodInfo) []uint32 {
	var order []uint32
	for i := range pods {
		if p := &pods[i]; p.IsEvictable() && p.HasStats && excess(p) > 0 {
			order = append(order, uint32(i))
		}
	}
	slices.SortStableFunc(order, func(a, b uint32) int {
		pa, pb := &pods[a], &pods[b]
		if pa.Priority != pb.Priority {
			return int(pa.Priority) - int(pb.Priority)
		}
		ea, eb := excess(pa), excess(pb)
		switch {
		case ea > eb:
			return -1
		case ea < eb:
			return 1
		}
		return 0
	})
	return order
}

// overLimit is the first of full and (when configured) some at or over its
// limit: its name, the reading and the limit.
func (g *PsiGuard) overLimit(psi *plugin.NodePSI) (kind string, share, limit float64, ok bool) {
	full := plugin.Percent(psi.Memory.Full.Avg10)
	if full >= g.config.MemoryFullAvg10Percent {
		return "full", full, g.config.MemoryFullAvg10Percent, true
	}
	some := plugin.Percent(psi.Memory.Some.Avg10)
	if l := g.config.MemorySomeAvg10Percent; l != nil && some >= *l {
		return "some", some, *l, true
	}
	return "", 0, 0, false
}

func (g *PsiGuard) Watch(_ *plugin.NodeInfo, psi *plugin.NodePSI, pods []plugin.PodInfo) (*plugin.EvictNow, error) {
	kind, share, limit, ok := g.overLimit(psi)
	if !ok {
		g.over = false
		return nil, nil
	}
	if !g.over {
		g.over, g.overSinceMs = true, psi.ReadUnixMs
	}
	var heldMs uint64
	if psi.ReadUnixMs > g.overSinceMs {
		heldMs = psi.ReadUnixMs - g.overSinceMs
	}
	if heldMs < g.config.ForSeconds*1000 {
		return nil, nil
	}
	order := Candidates(pods)
	if len(order) == 0 {
		return nil, nil
	}
	// Counting starts again: the next request comes after another forSeconds.
	g.overSinceMs = psi.ReadUnixMs
	return &plugin.EvictNow{
		Pods:   order,
		Reason: fmt.Sprintf("memory %s avg10 %.2f%% at or over %g%% for %d s", kind, share, limit, heldMs/1000),
	}, nil
}

var _ plugin.PressureEvictionPolicy = (*PsiGuard)(nil)

func init() { pressure.Export(New()) }

func main() {}
