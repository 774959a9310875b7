package plugin

import (
	"reflect"
	"strings"
	"testing"
)

func TestPackedPodsRoundTripAndMalformedListsAreRefused(t *testing.T) {
	pods := []PodInfo{
		{Priority: -5, Qos: Guaranteed, IsStatic: true, HasStats: true, MemoryRequestBytes: 1, MemoryUsageBytes: 2,
			CPURequestMillis: 3, CPUUsageMillis: 4, DiskRequestBytes: 5, DiskUsageBytes: 6, InodesUsed: 7,
			ProcessCount: 8, ContainerCount: ^uint32(0), RestartCount: 9, StartTimeUnixMs: ^uint64(0)},
		{Priority: 2_000_000_000, Qos: BestEffort, IsCritical: true},
		{Priority: -1 << 31, Qos: Burstable},
	}
	got, err := UnpackPods(PackPods(pods, nil))
	if err != nil || !reflect.DeepEqual(got, pods) {
		t.Fatalf("got %+v, %v", got, err)
	}
	words := make([]uint64, PodWords)
	words[0] = 7 << 32
	if _, err := UnpackPods(words); err == nil || err.Error() != "pod 0 has unknown qos 7" {
		t.Fatal(err)
	}
	two := make([]uint64, 2*PodWords)
	two[PodWords] = 2 << 48
	if _, err := UnpackPods(two); err == nil || err.Error() != "pod 1 has is-critical 2 (not 0 or 1)" {
		t.Fatal(err)
	}
	if _, err := UnpackPods(make([]uint64, PodWords+1)); err == nil {
		t.Fatal("incomplete pod accepted")
	}
}

func TestDefaultRankFollowsUpstream(t *testing.T) {
	pods := []PodInfo{
		{HasStats: true, MemoryRequestBytes: 100, MemoryUsageBytes: 50},          // within request
		{HasStats: true, MemoryUsageBytes: 300},                                  // above, big
		{HasStats: false, Priority: 10},                                          // no stats: first
		{HasStats: true, MemoryUsageBytes: 200, Priority: -1},                    // above, lower priority
		{HasStats: true, MemoryUsageBytes: 900, IsCritical: true, Priority: 2e9}, // never
		{HasStats: true, ProcessCount: 40},
	}
	mem := DefaultRank([]SignalObservation{{Signal: MemoryAvailable}}, pods)
	if !reflect.DeepEqual(mem, []uint32{2, 3, 1, 5, 0}) {
		t.Fatalf("memory: %v", mem)
	}
	pid := DefaultRank([]SignalObservation{{Signal: PidAvailable}}, pods)
	if !reflect.DeepEqual(pid, []uint32{3, 5, 0, 1, 2}) {
		t.Fatalf("pid: %v", pid)
	}
}

func TestConfigIsStrict(t *testing.T) {
	c := struct {
		A string `json:"a"`
	}{A: "default"}
	if err := ParseConfig("", &c); err != nil || c.A != "default" {
		t.Fatal(c, err)
	}
	if err := ParseConfig(`{"b": 1}`, &c); err == nil || !strings.HasPrefix(err.Error(), "invalid plugin config") {
		t.Fatal(err)
	}
}
