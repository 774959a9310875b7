// Command admission-require-limits refuses pods whose containers lack CPU or
// memory limits, in chosen namespaces (world lifecycle-hooks, admit only): the
// Go twin of plugins/admission-require-limits.
//
// Config: {"namespaces": ["prod", "payments"]} (no namespace: admit all).
package main

import (
	"fmt"
	"slices"
	"strings"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/hooks"
)

// RequireLimits is the policy.
type RequireLimits struct {
	plugin.NoSelfCheck
	plugin.NoContainerHooks
	Namespaces []string `json:"namespaces"`
}

func (r *RequireLimits) Configure(text string) error {
	var c RequireLimits
	if err := plugin.ParseConfig(text, &c); err != nil {
		return err
	}
	r.Namespaces = c.Namespaces
	return nil
}

func (r *RequireLimits) Admit(pod *plugin.AdmissionPod) error {
	if len(r.Namespaces) == 0 {
		return nil
	}
	namespace := plugin.PodNamespace(pod.Index)
	if !slices.Contains(r.Namespaces, namespace) {
		return nil
	}
	var missing []string
	for _, c := range pod.Containers {
		var lacks string
		switch {
		case c.HasCPULimit && c.HasMemoryLimit:
			continue
		case c.HasMemoryLimit:
			lacks = "cpu limit"
		case c.HasCPULimit:
			lacks = "memory limit"
		default:
			lacks = "cpu and memory limits"
		}
		missing = append(missing, fmt.Sprintf("container %q has no %s", c.Name, lacks))
	}
	if len(missing) == 0 {
		return nil
	}
	plugin.Log(plugin.Info, "pod refused: missing limits",
		plugin.Field{Key: "namespace", Value: namespace}, plugin.Field{Key: "pod", Value: plugin.PodName(pod.Index)})
	return fmt.Errorf("namespace %q requires cpu and memory limits: %s", namespace, strings.Join(missing, "; "))
}

func init() { hooks.Export(&RequireLimits{}) }

func main() {}
