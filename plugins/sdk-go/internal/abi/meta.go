//go:build wasip1

package abi

import (
	"runtime"
	"unsafe"
)

//go:wasmimport wasmlet:plugin/pod-meta@0.1.2 pod-namespace
func metaNamespace(index, ret uint32)

//go:wasmimport wasmlet:plugin/pod-meta@0.1.2 pod-name
func metaName(index, ret uint32)

//go:wasmimport wasmlet:plugin/pod-meta@0.1.2 pod-uid
func metaUID(index, ret uint32)

//go:wasmimport wasmlet:plugin/pod-meta@0.1.2 pod-label
func metaLabel(index, keyPtr, keyLen, ret uint32)

//go:wasmimport wasmlet:plugin/pod-meta@0.1.2 pod-annotation
func metaAnnotation(index, keyPtr, keyLen, ret uint32)

//go:wasmimport wasmlet:plugin/pod-meta@0.1.2 image-tags
func metaImageTags(index, ret uint32)

// Meta answers the plugin package's pod-meta functions through the imports.
// Only the worlds that import pod-meta install it, so other plugins do not
// link these imports.
type Meta struct{}

func stringResult(call func(ret uint32)) string {
	var r [2]uint32
	call(addr(unsafe.Pointer(&r[0])))
	return String(r[0], r[1])
}

func optionResult(call func(ret uint32)) (string, bool) {
	var r [3]uint32
	call(addr(unsafe.Pointer(&r[0])))
	if uint8(r[0]) == 0 {
		return "", false
	}
	return String(r[1], r[2]), true
}

func (Meta) PodNamespace(i uint32) string {
	return stringResult(func(r uint32) { metaNamespace(i, r) })
}

func (Meta) PodName(i uint32) string { return stringResult(func(r uint32) { metaName(i, r) }) }

func (Meta) PodUID(i uint32) string { return stringResult(func(r uint32) { metaUID(i, r) }) }

func (Meta) PodLabel(i uint32, key string) (string, bool) {
	kp, kn := stringArg(key)
	defer runtime.KeepAlive(key)
	return optionResult(func(r uint32) { metaLabel(i, kp, kn, r) })
}

func (Meta) PodAnnotation(i uint32, key string) (string, bool) {
	kp, kn := stringArg(key)
	defer runtime.KeepAlive(key)
	return optionResult(func(r uint32) { metaAnnotation(i, kp, kn, r) })
}

func (Meta) ImageTags(i uint32) []string {
	var r [2]uint32
	metaImageTags(i, addr(unsafe.Pointer(&r[0])))
	return Strings(r[0], r[1])
}
