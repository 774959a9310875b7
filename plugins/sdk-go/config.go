package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ParseConfig decodes the plugin config text into v (a pointer to a struct
// already holding the defaults). Empty text, "{}" and "null" keep the
// defaults; an unknown field is an error, as in the Rust SDK. The error is
// ready to return from Configure.
func ParseConfig(text string, v any) error { return ParseAs("plugin config", text, v) }

// ParseAs is ParseConfig for a value that is not a whole config, such as a
// probe's args; the error says "invalid <what>: ...".
func ParseAs(what, text string, v any) error {
	trimmed := strings.TrimSpace(text)
	if trimmed == "" || trimmed == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(trimmed)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid %s: %w", what, err)
	}
	if dec.More() {
		return fmt.Errorf("invalid %s: trailing characters", what)
	}
	return nil
}
