// Command eviction-batch-first evicts batch pods before anything else and never
// touches protected namespaces (world eviction-policy): the Go twin of
// plugins/eviction-batch-first, with the same decisions.
//
// Starts from the upstream order for the pressure at hand, drops pods in
// protectNamespaces, and moves pods labelled batchLabel=batchValue to the
// front, keeping the upstream order within each group.
//
// Config:
// {"protectNamespaces": ["kube-system"], "batchLabel": "workload-class", "batchValue": "batch"}
package main

import (
	"errors"
	"slices"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/eviction"
)

type config struct {
	ProtectNamespaces []string `json:"protectNamespaces"`
	BatchLabel        string   `json:"batchLabel"`
	BatchValue        string   `json:"batchValue"`
}

// BatchFirst is the policy.
type BatchFirst struct {
	plugin.NoSelfCheck
	config config
}

// New is the policy with the default config.
func New() *BatchFirst {
	return &BatchFirst{config: config{BatchLabel: "workload-class", BatchValue: "batch"}}
}

func (b *BatchFirst) Configure(text string) error {
	c := New().config
	if err := plugin.ParseConfig(text, &c); err != nil {
		return err
	}
	if c.BatchLabel == "" {
		return errors.New("batchLabel must not be empty")
	}
	b.config = c
	return nil
}

func (b *BatchFirst) Rank(_ *plugin.NodeInfo, pressure []plugin.SignalObservation, pods []plugin.PodInfo) ([]uint32, error) {
	var batch, rest []uint32
	for _, i := range plugin.DefaultRank(pressure, pods) {
		if slices.Contains(b.config.ProtectNamespaces, plugin.PodNamespace(i)) {
			continue
		}
		if v, ok := plugin.PodLabel(i, b.config.BatchLabel); ok && v == b.config.BatchValue {
			batch = append(batch, i)
		} else {
			rest = append(rest, i)
		}
	}
	return append(batch, rest...), nil
}

func init() { eviction.Export(New()) }

func main() {}
