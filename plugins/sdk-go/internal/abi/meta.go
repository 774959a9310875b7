//go:build wasip1

package abi

import "wasmlet.dev/plugin/internal/wit"

// Meta answers the plugin package's pod-meta functions through the imports.
// Only the worlds that import pod-meta install it, so other plugins do not
// link these imports.
type Meta struct{}

func (Meta) PodNamespace(i uint32) string { return wit.PodMetaPodNamespace(i) }

func (Meta) PodName(i uint32) string { return wit.PodMetaPodName(i) }

func (Meta) PodUID(i uint32) string { return wit.PodMetaPodUid(i) }

func (Meta) PodLabel(i uint32, key string) (string, bool) {
	return optional(wit.PodMetaPodLabel(i, key))
}

func (Meta) PodAnnotation(i uint32, key string) (string, bool) {
	return optional(wit.PodMetaPodAnnotation(i, key))
}

func (Meta) ImageTags(i uint32) []string { return wit.PodMetaImageTags(i) }

func optional(s *string) (string, bool) {
	if s == nil {
		return "", false
	}
	return *s, true
}
