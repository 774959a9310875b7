package main

import (
	"strings"
	"testing"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/plugintest"
)

func admit(t *testing.T, config, namespace string, containers ...plugin.AdmissionContainer) error {
	t.Helper()
	r := &RequireLimits{}
	if err := r.Configure(config); err != nil {
		t.Fatal(err)
	}
	defer plugin.UseMeta(plugin.UseMeta(plugintest.Snapshot{Pods: []plugintest.Meta{{Namespace: namespace, Name: "p"}}}))
	return r.Admit(&plugin.AdmissionPod{Containers: containers})
}

func TestOnlyChosenNamespacesNeedLimits(t *testing.T) {
	bare := plugin.AdmissionContainer{Name: "app"}
	full := plugin.AdmissionContainer{Name: "app", HasCPULimit: true, HasMemoryLimit: true}
	if err := admit(t, `{"namespaces": ["prod"]}`, "dev", bare); err != nil {
		t.Fatal(err)
	}
	if err := admit(t, `{"namespaces": ["prod"]}`, "prod", full); err != nil {
		t.Fatal(err)
	}
	err := admit(t, `{"namespaces": ["prod"]}`, "prod", full, plugin.AdmissionContainer{Name: "init", IsInit: true, HasCPULimit: true})
	if err == nil || !strings.Contains(err.Error(), `container "init" has no memory limit`) {
		t.Fatal(err)
	}
	if err := admit(t, "", "prod", bare); err != nil {
		t.Fatal(err)
	}
}
