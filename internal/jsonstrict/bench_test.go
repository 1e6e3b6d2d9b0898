package jsonstrict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// benchBatch is an ingest batch of n typical items (text, content,
// metadata with extra keys, links), as POST /v1/items receives it.
func benchBatch(b *testing.B, n int) []byte {
	b.Helper()
	items := make([]h4r.Item, n)
	for i := range items {
		trust, importance := 0.9, 0.5
		items[i] = h4r.Item{
			ID:      fmt.Sprintf("mem-%04d", i),
			Kind:    "test_failure",
			Text:    fmt.Sprintf("login-spec-%03d failed: element #login-button not found after deploy %d; the selector changed to #sign-in.", i, 800+i),
			Content: map[string]any{"test": fmt.Sprintf("login-spec-%03d", i), "deploy": 800 + i, "steps": []any{"open", "click", "assert"}},
			Metadata: h4r.Metadata{
				CreatedAt: time.Date(2026, 11, 17, 16, 0, 0, 0, time.UTC), Trust: &trust, Importance: &importance,
				Tags: []string{"selector", "login"}, RestrictedToGroups: []string{"qa"}, Source: "playwright",
				Extra: map[string]any{"test_type": "e2e", "status": "failed"},
			},
			Links: []h4r.Link{{Type: "caused_by", Target: fmt.Sprintf("mem-%04d", max(i-1, 0)), Strength: 0.8}},
		}
	}
	data, err := json.Marshal(map[string]any{"items": items})
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkDecode compares Decode, and a Decoder that keeps the members of
// the types it met, with the decode they replace on the success path:
// encoding/json with DisallowUnknownFields.
func BenchmarkDecode(b *testing.B) {
	data := benchBatch(b, 200)
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var v batch
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonstrict-decoder", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		d := new(Decoder)
		for b.Loop() {
			var v batch
			if err := d.Decode(data, &v, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonstrict", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var v batch
			if err := Decode(data, &v, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeSmall is a small request body (a context-pack request's
// shape), where working out the struct types' members is a large part of
// a fresh Decode: a Decoder that keeps them against Decode.
func BenchmarkDecodeSmall(b *testing.B) {
	data := []byte(`{"query": {"type": "hybrid", "text": "login button selector", "filters": {"kind": ["fix"]}}, "limit": 10, "extra": "e", "budget": {"maxItems": 5}}`)
	b.Run("jsonstrict", func(b *testing.B) {
		for b.Loop() {
			var v withEmbedded
			if err := Decode(data, &v, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonstrict-decoder", func(b *testing.B) {
		d := new(Decoder)
		for b.Loop() {
			var v withEmbedded
			if err := d.Decode(data, &v, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
