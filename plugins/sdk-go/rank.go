package plugin

import "sort"

// DefaultRank is the upstream eviction ranking (pkg/kubelet/eviction/helpers.go)
// for the first signal of pressure (memory when empty), most evictable first,
// without critical and static pods: the same order as the Rust SDK's
// defaults::eviction::rank and the host's built-in default.
//
//	memory, disk, inodes: no stats first, usage above request first, priority
//	                      ascending, usage minus request descending
//	PID:                  priority ascending, no stats first, process count descending
//
// Ties keep the input order.
func DefaultRank(pressure []SignalObservation, pods []PodInfo) []uint32 {
	kind := MemoryPressure
	if len(pressure) > 0 {
		kind = pressure[0].Signal.Pressure()
	}
	order := make([]uint32, 0, len(pods))
	for i := range pods {
		order = append(order, uint32(i))
	}
	sort.SliceStable(order, func(a, b int) bool {
		return Compare(kind, &pods[order[a]], &pods[order[b]]) < 0
	})
	out := order[:0]
	for _, i := range order {
		if pods[i].IsEvictable() {
			out = append(out, i)
		}
	}
	return out
}

// Compare is upstream's multi-key comparison: negative when a is evicted before b.
func Compare(kind Pressure, a, b *PodInfo) int {
	if kind == PidPressure {
		if c := cmpInt(int64(a.Priority), int64(b.Priority)); c != 0 {
			return c
		}
		if c := trueFirst(!a.HasStats, !b.HasStats); c != 0 {
			return c
		}
		return cmpUint(b.ProcessCount, a.ProcessCount)
	}
	measure := func(p *PodInfo) (usage, request uint64) {
		switch kind {
		case DiskPressure:
			return p.DiskUsageBytes, p.DiskRequestBytes
		case InodesPressure:
			return p.InodesUsed, 0
		default:
			return p.MemoryUsageBytes, p.MemoryRequestBytes
		}
	}
	if c := trueFirst(!a.HasStats, !b.HasStats); c != 0 {
		return c
	}
	both := a.HasStats && b.HasStats
	ua, ra := measure(a)
	ub, rb := measure(b)
	if both {
		if c := trueFirst(ua > ra, ub > rb); c != 0 {
			return c
		}
	}
	if c := cmpInt(int64(a.Priority), int64(b.Priority)); c != 0 {
		return c
	}
	if !both {
		return 0
	}
	// usage - request, descending, without overflow: compare ua+rb with ub+ra in 128 bits.
	return cmpSum(ub, ra, ua, rb)
}

func trueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpSum compares x1+x2 with y1+y2 without overflow.
func cmpSum(x1, x2, y1, y2 uint64) int {
	xs, xc := x1+x2, x1+x2 < x1
	ys, yc := y1+y2, y1+y2 < y1
	if xc != yc {
		if xc {
			return 1
		}
		return -1
	}
	return cmpUint(xs, ys)
}
