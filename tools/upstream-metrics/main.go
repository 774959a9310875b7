// upstream-metrics prints the metric families the upstream kubelet of one release registers, one
// JSON object a line, so a test can hold wasmlet's exposition to upstream's own registry rather
// than to a list written by hand:
//
//	{"endpoint": "/metrics", "name": "kubelet_running_pods", "type": "gauge", "help": "...",
//	 "labels": [], "buckets": []}
//
// scripts/upstream-metrics.sh builds it against k8s.io/kubernetes at the control plane's version.
//
// What is registered, per endpoint, follows pkg/kubelet/server/server.go and kubelet.go:
//   - /metrics: component-base's legacyregistry with every package-level registration the kubelet
//     binary links (the blank import of cmd/kubelet/app and cmd/kubelet's own blank imports: the
//     client-go and build-info metrics, storage_operation_duration_seconds, ...), then what
//     initializeModules registers at start: kubeletmetrics.Register(), the volume-stats and
//     log-size collectors, servermetrics.Register(). Series registered later at run time (the
//     certificate managers, device and credential plugins, the pod-certificate collector) are
//     not listed.
//   - /metrics/probes: a KubeRegistry with process_start_time_seconds and the prober's metrics.
//   - /metrics/resource: a KubeRegistry with the resource-metrics collector.
//   - /metrics/cadvisor: cAdvisor's machine and container collectors with the kubelet's metric
//     set and container labels (cadvisor.go).
//
// Why not just Gather(): a vector with no children is not gathered, and most kubelet families
// are vectors that have none in a fresh process. So every registered collector that is a vector
// (it has a variadic WithLabelValues(...string)) gets one child with placeholder label values
// first; the custom collectors are fed a fake stats provider whose data reaches every branch that
// emits a series. Then Gather() returns every family as the exposition would write it: its
// type, help text with the stability prefix, and histogram buckets as exposed (no reflection on
// options that a wrapper could change). Label names come from the registered descriptors
// (variable and constant labels), so they do not depend on the placeholders. A descriptor that
// still has no gathered family (a custom collector whose data could not be faked) is printed
// with type "unknown" and reported on stderr.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // as cmd/kubelet: client metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // as cmd/kubelet: kubernetes_build_info
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	_ "k8s.io/kubernetes/cmd/kubelet/app" // every package-level registration the kubelet links
	kubeletmetrics "k8s.io/kubernetes/pkg/kubelet/metrics"
	"k8s.io/kubernetes/pkg/kubelet/metrics/collectors"
	"k8s.io/kubernetes/pkg/kubelet/prober"
	servermetrics "k8s.io/kubernetes/pkg/kubelet/server/metrics"
	serverstats "k8s.io/kubernetes/pkg/kubelet/server/stats"
)

// family is one output line.
type family struct {
	Endpoint string    `json:"endpoint"`
	Name     string    `json:"name"`
	Type     string    `json:"type"`
	Help     string    `json:"help"`
	Labels   []string  `json:"labels"`
	Buckets  []float64 `json:"buckets"`
}

func main() {
	kubeletmetrics.Register()
	kubeletmetrics.RegisterCollectors(
		collectors.NewVolumeStatsCollector(fakeStats{}),
		collectors.NewLogMetricsCollector(fakeStats{}.ListPodStats),
	)
	servermetrics.Register()

	probes := metrics.NewKubeRegistry()
	_ = metrics.RegisterProcessStartTime(probes.Register)
	probes.MustRegister(prober.ProberResults)
	probes.MustRegister(prober.ProberDuration)

	resource := metrics.NewKubeRegistry()
	resource.CustomMustRegister(collectors.NewResourceMetricsCollector(fakeSummary{}))

	out := json.NewEncoder(os.Stdout)
	failed := false
	for _, endpoint := range []struct {
		path     string
		registry prometheus.Registerer
		gatherer prometheus.Gatherer
	}{
		{"/metrics", legacyregistry.Registerer(), legacyregistry.DefaultGatherer},
		{"/metrics/probes", probes.Registerer(), probes},
		{"/metrics/resource", resource.Registerer(), resource},
	} {
		families, err := describe(endpoint.path, endpoint.registry, endpoint.gatherer)
		if err != nil {
			fmt.Fprintf(os.Stderr, "upstream-metrics: %s: %v\n", endpoint.path, err)
			failed = true
			continue
		}
		for _, f := range families {
			if err := out.Encode(f); err != nil {
				fmt.Fprintf(os.Stderr, "upstream-metrics: %v\n", err)
				os.Exit(1)
			}
		}
	}
	cadvisor, err := cadvisorFamilies()
	if err != nil {
		fmt.Fprintf(os.Stderr, "upstream-metrics: /metrics/cadvisor: %v\n", err)
		failed = true
	}
	for _, f := range cadvisor {
		if err := out.Encode(f); err != nil {
			fmt.Fprintf(os.Stderr, "upstream-metrics: %v\n", err)
			os.Exit(1)
		}
	}
	if failed {
		os.Exit(1)
	}
}

// describe lists every family registered in registry, sorted by name.
func describe(endpoint string, registerer prometheus.Registerer, gatherer prometheus.Gatherer) ([]family, error) {
	registry, ok := registerer.(*prometheus.Registry)
	if !ok {
		return nil, fmt.Errorf("registerer is a %T, not a *prometheus.Registry", registerer)
	}
	for _, collector := range registeredCollectors(registry) {
		addPlaceholderChild(collector)
	}
	gathered, err := gatherer.Gather()
	if err != nil {
		// A collector's error does not stop the others' families being gathered.
		fmt.Fprintf(os.Stderr, "upstream-metrics: %s: gather: %v\n", endpoint, err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range gathered {
		byName[mf.GetName()] = mf
	}

	descs := make(chan *prometheus.Desc)
	go func() {
		registry.Describe(descs)
		close(descs)
	}()
	seen := map[string]bool{}
	var families []family
	for desc := range descs {
		name, help, labels := descParts(desc)
		if seen[name] {
			continue
		}
		seen[name] = true
		f := family{Endpoint: endpoint, Name: name, Type: "unknown", Help: help, Labels: labels, Buckets: []float64{}}
		if mf, ok := byName[name]; ok {
			f.Type = typeName(mf.GetType())
			f.Help = mf.GetHelp()
			if mf.GetType() == dto.MetricType_HISTOGRAM && len(mf.GetMetric()) > 0 {
				for _, bucket := range mf.GetMetric()[0].GetHistogram().GetBucket() {
					f.Buckets = append(f.Buckets, bucket.GetUpperBound())
				}
			}
		} else {
			fmt.Fprintf(os.Stderr, "upstream-metrics: %s: %s registered but not gathered; type unknown\n", endpoint, name)
		}
		families = append(families, f)
	}
	sort.Slice(families, func(i, j int) bool { return families[i].Name < families[j].Name })
	return families, nil
}

// registeredCollectors returns the checked collectors of registry. client_golang keeps them in an
// unexported map and offers no accessor; Describe() flattens them into descriptors, which loses
// the collector a vector's placeholder child must be added to.
func registeredCollectors(registry *prometheus.Registry) []prometheus.Collector {
	field := reflect.ValueOf(registry).Elem().FieldByName("collectorsByID")
	byID := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem()
	var out []prometheus.Collector
	iter := byID.MapRange()
	for iter.Next() {
		out = append(out, iter.Value().Interface().(prometheus.Collector))
	}
	return out
}

// addPlaceholderChild gives a vector (component-base's or client_golang's: any collector with a
// variadic WithLabelValues(...string)) one child, so Gather() shows its family.
func addPlaceholderChild(collector prometheus.Collector) {
	method := reflect.ValueOf(collector).MethodByName("WithLabelValues")
	if !method.IsValid() {
		return
	}
	t := method.Type()
	if !t.IsVariadic() || t.NumIn() != 1 || t.In(0) != reflect.TypeOf([]string(nil)) {
		return
	}
	descs := make(chan *prometheus.Desc, 16)
	go func() {
		collector.Describe(descs)
		close(descs)
	}()
	var variable int
	for desc := range descs {
		variable = variableLabelCount(desc)
	}
	values := make([]string, variable)
	for i := range values {
		values[i] = "placeholder"
	}
	method.CallSlice([]reflect.Value{reflect.ValueOf(values)})
}

// descParts reads a descriptor's name, help and label names (variable and constant, sorted).
// prometheus.Desc keeps them unexported; reflect reads unexported strings without unsafe.
func descParts(desc *prometheus.Desc) (string, string, []string) {
	v := reflect.ValueOf(desc).Elem()
	labels := []string{}
	pairs := v.FieldByName("constLabelPairs")
	for i := 0; i < pairs.Len(); i++ {
		labels = append(labels, pairs.Index(i).Elem().FieldByName("Name").Elem().String())
	}
	if variable := v.FieldByName("variableLabels"); !variable.IsNil() {
		names := variable.Elem().FieldByName("names")
		for i := 0; i < names.Len(); i++ {
			labels = append(labels, names.Index(i).String())
		}
	}
	sort.Strings(labels)
	return v.FieldByName("fqName").String(), v.FieldByName("help").String(), labels
}

func variableLabelCount(desc *prometheus.Desc) int {
	variable := reflect.ValueOf(desc).Elem().FieldByName("variableLabels")
	if variable.IsNil() {
		return 0
	}
	return variable.Elem().FieldByName("names").Len()
}

func typeName(t dto.MetricType) string {
	switch t {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return "histogram"
	case dto.MetricType_SUMMARY:
		return "summary"
	default:
		return "untyped"
	}
}

// fakeStats is the stats provider of the volume-stats and log-size collectors: one pod with one
// PVC volume (with health) and one container with log usage, so every series is emitted. Only
// ListPodStats is called; the embedded nil interface supplies the rest of the method set.
type fakeStats struct{ serverstats.Provider }

func (fakeStats) ListPodStats(context.Context) ([]statsapi.PodStats, error) {
	n := uint64(1)
	return []statsapi.PodStats{{
		PodRef: statsapi.PodReference{Name: "p", Namespace: "ns", UID: "u"},
		Containers: []statsapi.ContainerStats{{
			Name: "c",
			Logs: &statsapi.FsStats{UsedBytes: &n},
		}},
		VolumeStats: []statsapi.VolumeStats{{
			Name:   "v",
			PVCRef: &statsapi.PVCReference{Name: "claim", Namespace: "ns"},
			FsStats: statsapi.FsStats{
				CapacityBytes: &n, AvailableBytes: &n, UsedBytes: &n,
				Inodes: &n, InodesFree: &n, InodesUsed: &n,
			},
			VolumeHealthStats: &statsapi.VolumeHealthStats{Abnormal: false},
		}},
	}}, nil
}

// fakeSummary is the resource-metrics collector's summary: a node, a pod and a container with
// CPU, memory and swap, so every series of /metrics/resource is emitted.
type fakeSummary struct{}

func (fakeSummary) Get(ctx context.Context, _ bool) (*statsapi.Summary, error) {
	return fakeSummary{}.GetCPUAndMemoryStats(ctx)
}

func (fakeSummary) GetCPUAndMemoryStats(context.Context) (*statsapi.Summary, error) {
	n := uint64(1)
	now := metav1.NewTime(time.Now())
	cpu := &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: &n}
	memory := &statsapi.MemoryStats{Time: now, WorkingSetBytes: &n}
	swap := &statsapi.SwapStats{Time: now, SwapUsageBytes: &n, SwapAvailableBytes: &n}
	return &statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: "n", CPU: cpu, Memory: memory, Swap: swap},
		Pods: []statsapi.PodStats{{
			PodRef: statsapi.PodReference{Name: "p", Namespace: "ns", UID: "u"},
			CPU:    cpu, Memory: memory, Swap: swap,
			Containers: []statsapi.ContainerStats{{
				Name: "c", StartTime: now, CPU: cpu, Memory: memory, Swap: swap,
			}},
		}},
	}, nil
}
