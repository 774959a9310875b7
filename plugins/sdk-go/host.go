package plugin

import (
	"fmt"
	"os"
)

// LogLevel is host.log-level.
type LogLevel uint8

const (
	Trace LogLevel = iota
	Debug
	Info
	Warn
	Error
)

// Field is one key/value pair of a log event.
type Field struct{ Key, Value string }

// Host is what answers the host's functions: the component's imports when the
// plugin runs in wasmlet, a fixture under `go test` (package plugintest). The
// world packages and plugintest install one with UseHost; plugin code calls the
// free functions below.
type Host interface {
	Log(level LogLevel, message string, fields []Field)
	NowUnixMs() uint64
}

// Meta answers pod-meta for the call in progress (worlds eviction-policy,
// gc-strategy and lifecycle-hooks).
type Meta interface {
	PodNamespace(index uint32) string
	PodName(index uint32) string
	PodUID(index uint32) string
	PodLabel(index uint32, key string) (string, bool)
	PodAnnotation(index uint32, key string) (string, bool)
	ImageTags(index uint32) []string
}

var (
	host Host = stderrHost{}
	meta Meta = noMeta{}
)

// UseHost installs the host behind Log and NowUnixMs and returns the previous one.
// For world packages and test harnesses.
func UseHost(h Host) Host { old := host; host = h; return old }

// UseMeta installs what answers the pod-meta functions and returns the previous
// one. For world packages and test harnesses.
func UseMeta(m Meta) Meta { old := meta; meta = m; return old }

// Log writes one structured event to the host's log, with the plugin's name
// attached. The host caps sizes and rate-limits; nothing here fails.
func Log(level LogLevel, message string, fields ...Field) { host.Log(level, message, fields) }

// NowUnixMs is the wall clock in Unix milliseconds.
func NowUnixMs() uint64 { return host.NowUnixMs() }

// PodNamespace is metadata.namespace of pod index of the current call ("" when out of range).
func PodNamespace(index uint32) string { return meta.PodNamespace(index) }

// PodName is metadata.name of pod index.
func PodName(index uint32) string { return meta.PodName(index) }

// PodUID is metadata.uid of pod index.
func PodUID(index uint32) string { return meta.PodUID(index) }

// PodLabel is label key of pod index, and whether it is set.
func PodLabel(index uint32, key string) (string, bool) { return meta.PodLabel(index, key) }

// PodAnnotation is annotation key of pod index, and whether it is set.
func PodAnnotation(index uint32, key string) (string, bool) { return meta.PodAnnotation(index, key) }

// ImageTags are the repo tags of image index in PlanImages.
func ImageTags(index uint32) []string { return meta.ImageTags(index) }

// stderrHost serves code run outside wasmlet and outside a harness.
type stderrHost struct{}

func (stderrHost) Log(level LogLevel, message string, fields []Field) {
	fmt.Fprintf(os.Stderr, "[%d] %s %v\n", level, message, fields)
}

func (stderrHost) NowUnixMs() uint64 { return 0 }

// noMeta answers as the host does outside a call: "" and not set.
type noMeta struct{}

func (noMeta) PodNamespace(uint32) string                  { return "" }
func (noMeta) PodName(uint32) string                       { return "" }
func (noMeta) PodUID(uint32) string                        { return "" }
func (noMeta) PodLabel(uint32, string) (string, bool)      { return "", false }
func (noMeta) PodAnnotation(uint32, string) (string, bool) { return "", false }
func (noMeta) ImageTags(uint32) []string                   { return nil }
