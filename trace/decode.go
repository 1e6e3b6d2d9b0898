package trace

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/h4r/h4r/internal/jsonstrict"
)

// Decode decodes a CommitTrace strictly: an unknown field, a wrong type
// or a trailing value is an invalid_argument *h4r.Error naming its path.
// POST /v1/traces uses it: a caller that misspells a field hears of it.
func Decode(data []byte) (*CommitTrace, error) {
	var t CommitTrace
	if err := jsonstrict.Decode(data, &t, ""); err != nil {
		return nil, err
	}
	return &t, nil
}

// DecodeFromBus decodes a trace published on the bus, where nobody hears
// an error: top-level fields this version does not know (a newer
// producer's additions, such as session_id) are left out and returned by
// name, so that the trace is stored rather than lost. Everything else is
// as strict as Decode.
func DecodeFromBus(data []byte) (*CommitTrace, []string, error) {
	t, err := Decode(data)
	if err == nil {
		return t, nil, nil
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(data, &raw) != nil {
		return nil, nil, err
	}
	known := traceFields()
	var unknown []string
	for k := range raw {
		if !known[k] {
			unknown = append(unknown, k)
			delete(raw, k)
		}
	}
	if len(unknown) == 0 {
		return nil, nil, err
	}
	slices.Sort(unknown)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(raw) != nil {
		return nil, nil, err
	}
	t, err = Decode(buf.Bytes())
	if err != nil {
		return nil, nil, err
	}
	return t, unknown, nil
}

// traceFields are the JSON names of CommitTrace's fields.
func traceFields() map[string]bool {
	rt := reflect.TypeFor[CommitTrace]()
	names := make(map[string]bool, rt.NumField())
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names[name] = true
		}
	}
	return names
}
