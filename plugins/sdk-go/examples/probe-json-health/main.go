// Command probe-json-health GETs a JSON health document and compares one field
// (world probe-handler): the Go twin of plugins/probe-json-health.
//
// Args (the pod annotation's value), all optional but port when the pod
// declares more than one port:
// {"port": 8080, "path": "/health", "field": "status", "expected": "ok"}
//
// field is a dot-separated path (checks.db.status); expected is any JSON value.
// Success when the response is 2xx, its body is JSON and the field equals
// expected; failure otherwise; unknown when the body is not JSON. Plugin config
// (optional) sets the defaults for all pods: {"path": ..., "field": ..., "expected": ...}.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/probe"
)

type defaults struct {
	Path     string `json:"path"`
	Field    string `json:"field"`
	Expected any    `json:"expected"`
}

type args struct {
	Port     *uint16 `json:"port"`
	Path     *string `json:"path"`
	Field    *string `json:"field"`
	Expected *any    `json:"expected"`
}

// JSONHealth is the probe.
type JSONHealth struct {
	plugin.NoSelfCheck
	defaults defaults
}

// New is the probe with the default config.
func New() *JSONHealth {
	return &JSONHealth{defaults: defaults{Path: "/health", Field: "status", Expected: "ok"}}
}

func (h *JSONHealth) Configure(text string) error {
	d := New().defaults
	if err := plugin.ParseConfig(text, &d); err != nil {
		return err
	}
	h.defaults = d
	return nil
}

func (h *JSONHealth) Check(req *plugin.ProbeRequest, pod plugin.PodAccess) plugin.ProbeResult {
	var a args
	if err := plugin.ParseAs("probe args", req.Args, &a); err != nil {
		return plugin.Failed(err.Error())
	}
	var port uint16
	switch {
	case a.Port != nil:
		port = *a.Port
	case len(req.Ports) == 1:
		port = req.Ports[0]
	default:
		return plugin.Failed(fmt.Sprintf("args need a \"port\": the pod declares %v", req.Ports))
	}
	path, field, expected := h.defaults.Path, h.defaults.Field, h.defaults.Expected
	if a.Path != nil {
		path = *a.Path
	}
	if a.Field != nil {
		field = *a.Field
	}
	if a.Expected != nil {
		expected = *a.Expected
	}
	resp, err := pod.HTTPGet(port, path, []plugin.Header{{Name: "Accept", Value: "application/json"}}, req.TimeoutMs)
	if err != nil {
		return plugin.Failed(fmt.Sprintf("GET :%d%s: %v", port, path, err))
	}
	if resp.Status < 200 || resp.Status >= 300 {
		return plugin.Failed(fmt.Sprintf("GET :%d%s: HTTP %d", port, path, resp.Status))
	}
	dec := json.NewDecoder(bytes.NewReader(resp.Body))
	dec.UseNumber()
	var body any
	if err := dec.Decode(&body); err != nil || dec.More() {
		if err == nil {
			err = fmt.Errorf("trailing characters")
		}
		return plugin.Undecided(fmt.Sprintf("GET :%d%s: body is not JSON: %v", port, path, err))
	}
	value, found := lookup(body, field)
	switch {
	case !found:
		return plugin.Failed(fmt.Sprintf("%s is missing from the health document", field))
	case equal(value, expected):
		return plugin.Succeeded(fmt.Sprintf("%s is %s", field, compact(value)))
	default:
		return plugin.Failed(fmt.Sprintf("%s is %s, expected %s", field, compact(value), compact(expected)))
	}
}

// lookup follows a dot-separated path through objects (and array indices).
func lookup(value any, path string) (any, bool) {
	for _, key := range strings.Split(path, ".") {
		if key == "" {
			continue
		}
		switch v := value.(type) {
		case map[string]any:
			next, ok := v[key]
			if !ok {
				return nil, false
			}
			value = next
		case []any:
			i, err := strconv.ParseUint(key, 10, 64)
			if err != nil || i >= uint64(len(v)) {
				return nil, false
			}
			value = v[i]
		default:
			return nil, false
		}
	}
	return value, true
}

// equal compares JSON values as the Rust twin does (serde_json's Value): numbers
// by their integer or float value, the rest structurally.
func equal(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numbersEqual(x, y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		return ok && x == y
	default: // bool, nil
		return a == b
	}
}

// numbersEqual: integers equal integers by value, floats equal floats; an
// integer never equals a float (1 != 1.0), as in serde_json.
func numbersEqual(x, y json.Number) bool {
	xi, xerr := strconv.ParseInt(string(x), 10, 64)
	yi, yerr := strconv.ParseInt(string(y), 10, 64)
	if xerr == nil || yerr == nil {
		if xerr == nil && yerr == nil {
			return xi == yi
		}
		xu, xuerr := strconv.ParseUint(string(x), 10, 64)
		yu, yuerr := strconv.ParseUint(string(y), 10, 64)
		return xuerr == nil && yuerr == nil && xu == yu
	}
	xf, xerr := x.Float64()
	yf, yerr := y.Float64()
	if isInt(string(x)) != isInt(string(y)) {
		return false
	}
	return xerr == nil && yerr == nil && xf == yf
}

func isInt(s string) bool { return !strings.ContainsAny(s, ".eE") }

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func init() { probe.Export(New()) }

func main() {}
