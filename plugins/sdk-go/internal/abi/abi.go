//go:build wasip1

// Package abi is the component-model glue of the Go SDK: the canonical ABI of
// wit/ (package wasmlet:plugin@0.1.2) lowered by hand for Go's
// //go:wasmimport and //go:wasmexport on GOOS=wasip1. The signatures are
// checked against wit/ by wasmlet-componentize at every build (wit-component
// refuses a core function whose type is not the world's lowering), and the
// conformance suite runs the result against the Rust plugins.
//
// Memory: the host writes call arguments and import results into memory it
// gets from cabi_realloc. That must not allocate on Go's heap: an allocation can
// start a GC, which reads the clock, and a component may not call an import
// while the host is inside its realloc ("cannot leave component instance").
// So cabi_realloc bumps through a static slab, reset when each export call
// ends; everything read from it is copied out (a plugin may keep what it got).
// Results handed to the host are Go allocations held until the next call.
package abi

import (
	"unsafe"

	"wasmlet.dev/plugin"
)

var (
	// slab is where the host writes arguments and import results.
	slab     [slabWords]uint64
	slabUsed uintptr
	// overflow holds heap buffers for the rare request that does not fit the
	// slab (one that can trap if it starts a GC, as explained above).
	overflow [][]uint64
	// kept holds the previous export's results until the host has read them.
	kept []any
	// ret is the return area of exports whose results do not fit one value.
	ret [6]uint32
)

const slabWords = 128 * 1024 // 1 MiB

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	if newSize == 0 {
		return align
	}
	if align == 0 {
		align = 1
	}
	base := uintptr(unsafe.Pointer(&slab[0]))
	start := (base + slabUsed + uintptr(align) - 1) &^ (uintptr(align) - 1)
	var p uint32
	if start+uintptr(newSize) <= base+unsafe.Sizeof(slab) {
		slabUsed = start + uintptr(newSize) - base
		p = uint32(start)
	} else {
		buf := make([]uint64, (newSize+7)/8)
		overflow = append(overflow, buf)
		p = addr(unsafe.Pointer(&buf[0]))
	}
	if oldPtr != 0 && oldSize != 0 {
		copy(unsafe.Slice((*byte)(ptr(p)), newSize), unsafe.Slice((*byte)(ptr(oldPtr)), min(oldSize, newSize)))
	}
	return p
}

// Begin starts an export call: the previous call's results are released.
func Begin() { kept = kept[:0] }

// End finishes an export call: the slab is free for the next one.
func End() {
	slabUsed = 0
	clear(overflow)
	overflow = overflow[:0]
}

// ptr turns a linear-memory address into a Go pointer (Go's heap lives in
// the same linear memory).
func ptr(p uint32) unsafe.Pointer { return unsafe.Pointer(uintptr(p)) }

// addr is the linear-memory address of a Go pointer.
func addr(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

// String reads (ptr, len) as a string (a copy).
func String(p, n uint32) string {
	if n == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(ptr(p)), n))
}

// Bytes reads (ptr, len) as bytes (a copy).
func Bytes(p, n uint32) []byte {
	if n == 0 {
		return nil
	}
	return append([]byte(nil), unsafe.Slice((*byte)(ptr(p)), n)...)
}

// U64s reads a list<u64> in place: valid until the export call ends (rank
// decodes it into PodInfo values at once).
func U64s(p, n uint32) []uint64 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(ptr(p)), n)
}

// U16s reads a list<u16>.
func U16s(p, n uint32) []uint16 {
	if n == 0 {
		return nil
	}
	return append([]uint16(nil), unsafe.Slice((*uint16)(ptr(p)), n)...)
}

// Strings reads a list<string>.
func Strings(p, n uint32) []string {
	if n == 0 {
		return nil
	}
	words := unsafe.Slice((*uint32)(ptr(p)), 2*n)
	out := make([]string, n)
	for i := range out {
		out[i] = String(words[2*i], words[2*i+1])
	}
	return out
}

// Load8, Load32 and Load64 read a field at p+off.
func Load8(p, off uint32) uint8   { return *(*uint8)(ptr(p + off)) }
func Load16(p, off uint32) uint16 { return *(*uint16)(ptr(p + off)) }
func Load32(p, off uint32) uint32 { return *(*uint32)(ptr(p + off)) }
func Load64(p, off uint32) uint64 { return *(*uint64)(ptr(p + off)) }

// keepString returns (ptr, len) of s, held until the next call.
func keepString(s string) (uint32, uint32) {
	if len(s) == 0 {
		return 1, 0
	}
	kept = append(kept, s)
	return addr(unsafe.Pointer(unsafe.StringData(s))), uint32(len(s))
}

// ReturnUnit lowers result<_, string> into the return area.
func ReturnUnit(err error) uint32 {
	if err == nil {
		ret[0] = 0
	} else {
		ret[0] = 1
		ret[1], ret[2] = keepString(err.Error())
	}
	return addr(unsafe.Pointer(&ret[0]))
}

// ReturnIndices lowers result<list<u32>, string> into the return area.
func ReturnIndices(list []uint32, err error) uint32 {
	if err != nil {
		return ReturnUnit(err)
	}
	ret[0] = 0
	if len(list) == 0 {
		ret[1], ret[2] = 4, 0
	} else {
		kept = append(kept, list)
		ret[1], ret[2] = addr(unsafe.Pointer(&list[0])), uint32(len(list))
	}
	return addr(unsafe.Pointer(&ret[0]))
}

// ReturnProbe lowers a probe-result into the return area.
func ReturnProbe(r plugin.ProbeResult) uint32 {
	ret[0] = uint32(r.Outcome)
	ret[1], ret[2] = keepString(r.Message)
	return addr(unsafe.Pointer(&ret[0]))
}
