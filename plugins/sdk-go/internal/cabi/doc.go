// Package cabi is the runtime under the generated bindings (internal/wit): the
// canonical ABI's memory side for Go's //go:wasmimport and //go:wasmexport on
// GOOS=wasip1. Everything else is in its wasip1 files.
package cabi
