package main

import (
	"slices"
	"testing"

	"wasmlet.dev/plugin"
)

func TestLeastRecentlyUsedFirst(t *testing.T) {
	images := []plugin.ImageInfo{
		{SizeBytes: 100, LastUsedUnixMs: 30},
		{SizeBytes: 100, LastUsedUnixMs: 10},
		{SizeBytes: 100, LastUsedUnixMs: 20, InUse: true},
	}
	got, err := (&@TYPE@{}).PlanImages(&plugin.DiskInfo{BytesToFree: 150}, images)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{1, 0}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
