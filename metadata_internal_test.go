package h4r

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// unmarshalMetadataByEncoding is the definition UnmarshalJSON must agree
// with: each well-known key decoded as the object {key: value} into the
// wire struct, keys in order, the first failing key's error returned.
func unmarshalMetadataByEncoding(m *Metadata, b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return Errorf(EINVALID, "", "metadata must be a JSON object")
	}
	var w metadataJSON
	*m = Metadata{}
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		val := raw[key]
		if known, ok := wellKnownFold(key); ok && known != key {
			if strings.EqualFold(known, key) {
				return Errorf(EINVALID, key, "metadata keys are case-sensitive: did you mean %q?", known)
			}
			return Errorf(EINVALID, memberPath(key), "metadata key %q differs from the policy key %q only by white space or invisible characters: write %q", key, known, known)
		}
		if !isWellKnown(key) {
			var v any
			if err := json.Unmarshal(val, &v); err != nil {
				return Errorf(EINVALID, key, "invalid JSON value: %s", strings.TrimPrefix(err.Error(), "json: "))
			}
			if m.Extra == nil {
				m.Extra = map[string]any{}
			}
			m.Extra[key] = v
			continue
		}
		if err := noNullElement(key, val); err != nil {
			return err
		}
		one, _ := json.Marshal(map[string]json.RawMessage{key: val})
		if err := json.Unmarshal(one, &w); err != nil {
			return Errorf(EINVALID, key, "wrong type for %s: %s", key, jsonTypeHint(key))
		}
	}
	w.into(m)
	return nil
}

// Every well-known key has a field to decode into, and no other key has.
func TestMetadataFieldOfEveryWellKnownKey(t *testing.T) {
	var w metadataJSON
	for _, k := range wellKnownKeys() {
		if w.field(k) == nil {
			t.Errorf("well-known key %q has no field", k)
		}
	}
	for _, k := range []string{"Trust", "extra", "", "tags "} {
		if w.field(k) != nil {
			t.Errorf("key %q has a field", k)
		}
	}
}

var metadataSeeds = []string{
	`{"createdAt": "2026-11-20T10:00:00Z", "importance": 0.7, "trust": 0.9, "sensitivity": 0.2, "novelty": 0.1, "containsPII": true, "piiFields": ["$.content.a"], "restrictedToGroups": ["qa"], "tags": ["selector"], "source": "playwright", "test_type": "e2e", "version": 3, "accessCount": 9, "lastAccessedAt": "2026-11-21T10:00:00Z", "byteSize": 120, "tokens": 30}`,
	`{"importance": "x", "tRust": 1}`,                   // a type error before a case error in key order
	`{"Trust": 1, "tags": [1]}`,                         // a case error before a type error
	`{"tags": [1], "tags": ["a"]}`,                      // a duplicate key: the last one counts
	`{"tags": ["a", null]}`,                             // null in a list of strings
	`{"tags": ["a"], "zz": {"deep": [1, {"x": null}]}}`, // an extra key
	`{"createdAt": "yesterday", "validUntil": "2026-01-01T00:00:00Z"}`,
	`{"version": 1.5}`,
	`{"accessCount": 1e30}`,
	`{"trust": 0.5, "x": tru}`,
	`[]`,
	`null`,
	`{}`,
}

// FuzzMetadataDecodeEqualsPerKey: decoding each well-known key's value
// straight into its field gives the same metadata, and the same error, as
// decoding it as a one-key object into the wire struct, for any input.
func FuzzMetadataDecodeEqualsPerKey(f *testing.F) {
	for _, s := range metadataSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want Metadata
		gotErr, wantErr := got.UnmarshalJSON(b), unmarshalMetadataByEncoding(&want, b)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%s: error %v, per key %v", b, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %+v, per key %+v", b, got, want)
		}
	})
}

// BenchmarkMetadataUnmarshal: a stored item's metadata decoded, each value
// straight into its field against as a one-key object, in the same run.
func BenchmarkMetadataUnmarshal(b *testing.B) {
	in := []byte(metadataSeeds[0])
	b.Run("decode=direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m Metadata
			if err := m.UnmarshalJSON(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode=by-encoding", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m Metadata
			if err := unmarshalMetadataByEncoding(&m, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
