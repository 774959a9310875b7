package main

import (
	"testing"

	"wasmlet.dev/plugin"
)

func TestMemoryLimitRequired(t *testing.T) {
	pod := &plugin.AdmissionPod{Containers: []plugin.AdmissionContainer{{Name: "app", HasMemoryLimit: true}}}
	if err := (&@TYPE@{}).Admit(pod); err != nil {
		t.Fatal(err)
	}
	pod.Containers = append(pod.Containers, plugin.AdmissionContainer{Name: "sidecar"})
	if err := (&@TYPE@{}).Admit(pod); err == nil {
		t.Fatal("admitted a container without a memory limit")
	}
}
