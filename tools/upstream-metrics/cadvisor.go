package main

import (
	"reflect"
	"sort"

	cadvisorcontainer "github.com/google/cadvisor/container"
	cadvisorinfo "github.com/google/cadvisor/info/v1"
	cadvisorv2 "github.com/google/cadvisor/info/v2"
	cadvisormetrics "github.com/google/cadvisor/metrics"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/clock"
)

// kubeletContainerLabels are the labels pkg/kubelet/server/server.go's
// containerPrometheusLabelsFunc gives every container series of /metrics/cadvisor.
var kubeletContainerLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

// kubeletCadvisorMetrics is the metric set the kubelet's /metrics/cadvisor handler includes
// (pkg/kubelet/server/server.go), pressure metrics with the KubeletPSI gate as there.
func kubeletCadvisorMetrics() cadvisorcontainer.MetricSet {
	set := cadvisorcontainer.MetricSet{
		cadvisorcontainer.CpuUsageMetrics:     struct{}{},
		cadvisorcontainer.MemoryUsageMetrics:  struct{}{},
		cadvisorcontainer.CpuLoadMetrics:      struct{}{},
		cadvisorcontainer.DiskIOMetrics:       struct{}{},
		cadvisorcontainer.DiskUsageMetrics:    struct{}{},
		cadvisorcontainer.NetworkUsageMetrics: struct{}{},
		cadvisorcontainer.AppMetrics:          struct{}{},
		cadvisorcontainer.ProcessMetrics:      struct{}{},
		cadvisorcontainer.OOMMetrics:          struct{}{},
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.KubeletPSI) {
		set[cadvisorcontainer.PressureMetrics] = struct{}{}
	}
	return set
}

// specOnly is the collectors' info provider: one container with a CPU and memory spec and no
// stats, and an empty machine, so that what cAdvisor builds per scrape (the version, the
// container spec series, the machine series) is gathered with its real types and labels. The
// per-stat container series need stats to be emitted; they are read from the collector's own
// table instead (cadvisorStatFamilies).
type specOnly struct{}

func (specOnly) GetVersionInfo() (*cadvisorinfo.VersionInfo, error) {
	return &cadvisorinfo.VersionInfo{}, nil
}

func (specOnly) GetMachineInfo() (*cadvisorinfo.MachineInfo, error) {
	return &cadvisorinfo.MachineInfo{}, nil
}

func (specOnly) GetRequestedContainersInfo(string, cadvisorv2.RequestOptions) (map[string]*cadvisorinfo.ContainerInfo, error) {
	return map[string]*cadvisorinfo.ContainerInfo{"/": {
		ContainerReference: cadvisorinfo.ContainerReference{Name: "/"},
		Spec: cadvisorinfo.ContainerSpec{
			HasCpu:    true,
			HasMemory: true,
			Cpu:       cadvisorinfo.CpuSpec{Quota: 1},
		},
	}}, nil
}

// kubeletLabels stands in for the kubelet's containerPrometheusLabelsFunc: its label names,
// empty values.
func kubeletLabels(*cadvisorinfo.ContainerInfo) map[string]string {
	set := map[string]string{}
	for _, name := range kubeletContainerLabels {
		set[name] = ""
	}
	return set
}

// cadvisorFamilies lists the families of the kubelet's /metrics/cadvisor: what the container
// and machine collectors emit for specOnly, and every per-stat container series of the
// collector's table with the kubelet's labels.
func cadvisorFamilies() ([]family, error) {
	included := kubeletCadvisorMetrics()
	opts := cadvisorv2.RequestOptions{IdType: cadvisorv2.TypeName, Count: 1, Recursive: true}
	containers := cadvisormetrics.NewPrometheusCollector(specOnly{}, kubeletLabels, included, clock.RealClock{}, opts)
	registry := prometheus.NewRegistry()
	registry.MustRegister(cadvisormetrics.NewPrometheusMachineCollector(specOnly{}, included))
	registry.MustRegister(containers)
	gathered, err := registry.Gather()
	if err != nil {
		return nil, err
	}
	byName := map[string]family{}
	for _, mf := range gathered {
		f := family{Endpoint: "/metrics/cadvisor", Name: mf.GetName(), Type: typeName(mf.GetType()), Help: mf.GetHelp(), Labels: []string{}, Buckets: []float64{}}
		if len(mf.GetMetric()) > 0 {
			for _, pair := range mf.GetMetric()[0].GetLabel() {
				f.Labels = append(f.Labels, pair.GetName())
			}
		}
		sort.Strings(f.Labels)
		byName[f.Name] = f
	}
	for _, f := range cadvisorStatFamilies(containers) {
		if _, ok := byName[f.Name]; !ok {
			byName[f.Name] = f
		}
	}
	families := make([]family, 0, len(byName))
	for _, f := range byName {
		families = append(families, f)
	}
	sort.Slice(families, func(i, j int) bool { return families[i].Name < families[j].Name })
	return families, nil
}

// cadvisorStatFamilies reads the collector's table of per-stat container series (its
// unexported containerMetrics: name, help, value type and the labels each adds to the
// container's), the table Collect emits from once a container has stats.
func cadvisorStatFamilies(collector *cadvisormetrics.PrometheusCollector) []family {
	table := reflect.ValueOf(collector).Elem().FieldByName("containerMetrics")
	var families []family
	for i := 0; i < table.Len(); i++ {
		metric := table.Index(i)
		labels := append([]string{}, kubeletContainerLabels...)
		extra := metric.FieldByName("extraLabels")
		for j := 0; j < extra.Len(); j++ {
			labels = append(labels, extra.Index(j).String())
		}
		sort.Strings(labels)
		kind := "untyped"
		switch prometheus.ValueType(metric.FieldByName("valueType").Int()) {
		case prometheus.CounterValue:
			kind = typeName(dto.MetricType_COUNTER)
		case prometheus.GaugeValue:
			kind = typeName(dto.MetricType_GAUGE)
		}
		families = append(families, family{
			Endpoint: "/metrics/cadvisor",
			Name:     metric.FieldByName("name").String(),
			Type:     kind,
			Help:     metric.FieldByName("help").String(),
			Labels:   labels,
			Buckets:  []float64{},
		})
	}
	return families
}
