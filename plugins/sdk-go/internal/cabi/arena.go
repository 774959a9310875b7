//go:build wasip1

package cabi

// adapterArena is the memory of the WASI preview1 adapter (its state and its
// stack). The adapter allocates them on the first WASI call, which Go's runtime
// makes during start-up, when calling back into Go is fatal; so
// wasmlet-componentize finds this array by its leading marker and gives the
// adapter a plain-Wasm bump allocator over it (plugins/componentize/src/arena.rs).
// Go code never touches it.
var adapterArena = [512 * 1024]byte{'w', 'a', 's', 'm', 'l', 'e', 't', ':', 'a', 'd', 'a', 'p', 't', 'e', 'r', '-', 'a', 'r', 'e', 'n', 'a', ':', 'v', '1', 0,
	// Not zero, so the linker keeps the NUL above in the same data segment
	// (it splits segments at runs of 8 zero bytes).
	'-', '-', '-'}

// arenaRef keeps the linker from dropping the array (nothing in Go reads it).
var arenaRef *[len(adapterArena)]byte

func init() { arenaRef = &adapterArena }
