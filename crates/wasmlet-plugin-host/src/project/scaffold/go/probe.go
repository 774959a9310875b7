// Command @NAME@ is a wasmlet probe: succeeds when GET /healthz on the
// pod's first declared port answers 2xx.
package main

import (
	"fmt"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/probe"
)

// @TYPE@ is the probe.
type @TYPE@ struct{ plugin.NoSelfCheck }

// Configure takes the plugin config (JSON); this probe has none.
func (*@TYPE@) Configure(config string) error { return plugin.ParseConfig(config, &struct{}{}) }

// Check GETs /healthz.
func (*@TYPE@) Check(req *plugin.ProbeRequest, pod plugin.PodAccess) plugin.ProbeResult {
	if len(req.Ports) == 0 {
		return plugin.Failed("the pod declares no port")
	}
	resp, err := pod.HTTPGet(req.Ports[0], "/healthz", nil, req.TimeoutMs)
	if err != nil {
		return plugin.Failed(err.Error())
	}
	if resp.Status < 200 || resp.Status > 299 {
		return plugin.Failed(fmt.Sprintf("/healthz answered %d", resp.Status))
	}
	return plugin.Succeeded(fmt.Sprintf("/healthz answered %d", resp.Status))
}

func init() { probe.Export(&@TYPE@{}) }

func main() {}
