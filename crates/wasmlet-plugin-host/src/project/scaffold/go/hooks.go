// Command @NAME@ is a wasmlet admission plugin: it refuses pods with a
// container that sets no memory limit.
package main

import (
	"fmt"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/hooks"
)

// @TYPE@ is the plugin; it has no post-start or pre-stop hook.
type @TYPE@ struct {
	plugin.NoSelfCheck
	plugin.NoContainerHooks
}

// Configure takes the plugin config (JSON); this plugin has none.
func (*@TYPE@) Configure(config string) error { return plugin.ParseConfig(config, &struct{}{}) }

// Admit refuses a pod with a container without a memory limit.
func (*@TYPE@) Admit(pod *plugin.AdmissionPod) error {
	for _, c := range pod.Containers {
		if !c.HasMemoryLimit {
			return fmt.Errorf("container %s sets no memory limit", c.Name)
		}
	}
	return nil
}

func init() { hooks.Export(&@TYPE@{}) }

func main() {}
