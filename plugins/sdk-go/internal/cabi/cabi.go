//go:build wasip1

package cabi

import (
	"unsafe"
)

// Memory: the host writes call arguments and import results into memory it
// gets from cabi_realloc. That must not allocate on Go's heap: an allocation can
// start a GC, which reads the clock, and a component may not call an import
// while the host is inside its realloc ("cannot leave component instance").
// So cabi_realloc bumps through a static slab, reset when each export call
// ends; the bindings copy out everything they read from it (a plugin may keep
// what it got). What the bindings hand to the host (results, import
// arguments) are Go allocations kept until the next export call begins.
var (
	// slab is where the host writes arguments and import results.
	slab     [slabWords]uint64
	slabUsed uintptr
	// overflow holds heap buffers for the rare request that does not fit the
	// slab (one that can trap if it starts a GC, as explained above).
	overflow [][]uint64
	// kept holds what the host may still read: the previous export's results
	// and the arguments of imports.
	kept []any
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
		p = Addr(unsafe.Pointer(&buf[0]))
	}
	if oldPtr != 0 && oldSize != 0 {
		copy(unsafe.Slice((*byte)(ptr(p)), newSize), unsafe.Slice((*byte)(ptr(oldPtr)), min(oldSize, newSize)))
	}
	return p
}

// PanicHook, when set, sees a panic of an export before the instance traps.
var PanicHook func(recovered any)

// Guard, deferred by every export, hands a panic to PanicHook, then lets it
// trap the instance (the host rebuilds it).
func Guard() {
	if r := recover(); r != nil {
		if PanicHook != nil {
			PanicHook(r)
		}
		panic(r)
	}
}

// Begin starts an export call: the previous call's results are released.
func Begin() {
	clear(kept)
	kept = kept[:0]
}

// End finishes an export call: the slab is free for the next one.
func End() {
	slabUsed = 0
	clear(overflow)
	overflow = overflow[:0]
}

// ptr turns a linear-memory address into a Go pointer (Go's heap lives in
// the same linear memory).
func ptr(p uint32) unsafe.Pointer { return unsafe.Pointer(uintptr(p)) }

// Addr is the linear-memory address of a Go pointer.
func Addr(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

// Load8 to LoadF64 read the value at p.
func Load8(p uint32) uint8       { return *(*uint8)(ptr(p)) }
func Load16(p uint32) uint16     { return *(*uint16)(ptr(p)) }
func Load32(p uint32) uint32     { return *(*uint32)(ptr(p)) }
func Load64(p uint32) uint64     { return *(*uint64)(ptr(p)) }
func LoadF32(p uint32) float32   { return *(*float32)(ptr(p)) }
func LoadF64(p uint32) float64   { return *(*float64)(ptr(p)) }
func Store8(p uint32, v uint8)   { *(*uint8)(ptr(p)) = v }
func Store16(p uint32, v uint16) { *(*uint16)(ptr(p)) = v }
func Store32(p uint32, v uint32) { *(*uint32)(ptr(p)) = v }
func Store64(p uint32, v uint64) { *(*uint64)(ptr(p)) = v }
func StoreF32(p uint32, v float32) {
	*(*float32)(ptr(p)) = v
}
func StoreF64(p uint32, v float64) { *(*float64)(ptr(p)) = v }

// Bool is a bool as a core value; Bool8 as a byte in memory.
func Bool(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// Bool8 is a bool as a byte in memory.
func Bool8(b bool) uint8 { return uint8(Bool(b)) }

// String reads (p, n) as a string (a copy).
func String(p, n uint32) string {
	if n == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(ptr(p)), n))
}

// Bytes reads (p, n) as bytes (a copy).
func Bytes(p, n uint32) []byte {
	if n == 0 {
		return nil
	}
	return append([]byte(nil), unsafe.Slice((*byte)(ptr(p)), n)...)
}

// Copy reads a list of n numbers (or bools) at p (a copy).
func Copy[T any](p, n uint32) []T {
	if n == 0 {
		return nil
	}
	return append([]T(nil), unsafe.Slice((*T)(ptr(p)), n)...)
}

// List reads a list of n elements of size bytes at p, each with elem.
func List[T any](p, n, size uint32, elem func(p uint32) T) []T {
	if n == 0 {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		out[i] = elem(p + uint32(i)*size)
	}
	return out
}

// Option is an option's value: nil for none.
func Option[T any](some bool, value func() T) *T {
	if !some {
		return nil
	}
	v := value()
	return &v
}

// KeepString returns (pointer, length) of s, kept until the next export call.
func KeepString(s string) (uint32, uint32) {
	if len(s) > 0 {
		kept = append(kept, s)
	}
	return StringArg(s)
}

// KeepSlice returns (pointer, length) of a list of numbers (or bools), whose
// Go layout is the canonical one, kept until the next export call.
func KeepSlice[T any](s []T) (uint32, uint32) {
	if len(s) > 0 {
		kept = append(kept, s)
	}
	return SliceArg(s)
}

// Alloc returns size bytes (8-byte aligned, which covers every align) of Go
// memory, kept until the next export call.
func Alloc(size, align uint32) uint32 {
	if size == 0 {
		return align
	}
	buf := make([]uint64, (size+7)/8)
	kept = append(kept, buf)
	return Addr(unsafe.Pointer(&buf[0]))
}

// StringArg returns (pointer, length) of s for an import's argument, which the
// host reads during the call only; the caller keeps s alive across the call.
func StringArg(s string) (uint32, uint32) {
	if len(s) == 0 {
		return 1, 0
	}
	return Addr(unsafe.Pointer(unsafe.StringData(s))), uint32(len(s))
}

// SliceArg is StringArg for a list of numbers (or bools).
func SliceArg[T any](s []T) (uint32, uint32) {
	if len(s) == 0 {
		var zero T
		return uint32(unsafe.Alignof(zero)), 0
	}
	return Addr(unsafe.Pointer(unsafe.SliceData(s))), uint32(len(s))
}
