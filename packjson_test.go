package h4r_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/h4r/h4r"
)

// filler sets every field of a value, walking its type, from a stream of
// choices: a field added to a pack's types is set too, so that a writer
// that leaves it out differs from encoding/json.
type filler struct {
	in []byte
	at int
}

// next returns the next choice in [0, n).
func (f *filler) next(n int) int {
	if len(f.in) == 0 {
		return n - 1 // no input: the last of every choice, which sets every field
	}
	b := f.in[f.at%len(f.in)]
	f.at++
	return int(b) % n
}

var (
	fillStrings = []string{"", "mem-1", "<b>&amp;</b>", "line\u2028sep\n\"q\"\\", "naïve 日本", "bad\xffutf8", "\x00\x1f"}
	fillAny     = []any{nil, "<x>", 1.5, 3, false, []any{nil, 1e-9, "y"}, []any(nil), map[string]any{"b": true, "a": map[string]any{}}, map[string]any(nil), struct{ A int }{1}, json.Number("12")}
	fillFloats  = []float64{0, 0.49890116084894315, 1e-7, 5.465077542396811e-10, 1e21, -2.5, 123456789.125, math.SmallestNonzeroFloat64}
)

func (f *filler) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fillStrings[f.next(len(fillStrings))])
	case reflect.Bool:
		v.SetBool(f.next(2) == 1)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(f.next(4)*1000 - 1001))
	case reflect.Float64:
		v.SetFloat(fillFloats[f.next(len(fillFloats))])
	case reflect.Pointer:
		if f.next(3) != 0 {
			v.Set(reflect.New(v.Type().Elem()))
			f.fill(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i))
		}
	case reflect.Slice:
		switch f.next(4) {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + f.next(3)
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				f.fill(v.Index(i))
			}
		}
	case reflect.Map:
		switch f.next(3) {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeMap(v.Type()))
		default:
			v.Set(reflect.MakeMap(v.Type()))
			for range 1 + f.next(3) {
				k := reflect.New(v.Type().Key()).Elem()
				f.fill(k)
				e := reflect.New(v.Type().Elem()).Elem()
				if e.Kind() == reflect.Interface { // free-form: what a decoded item's content holds
					if a := fillAny[f.next(len(fillAny))]; a != nil {
						e.Set(reflect.ValueOf(a))
					}
				} else {
					f.fill(e)
				}
				v.SetMapIndex(k, e)
			}
		}
	}
}

func requireSameJSON(t *testing.T, p *h4r.Pack) {
	t.Helper()
	want, werr := json.Marshal(p)
	got, err := p.AppendJSON([]byte("prefix"))
	if (err != nil) != (werr != nil) {
		t.Fatalf("AppendJSON error %v, encoding/json's %v", err, werr)
	}
	if err != nil {
		if string(got) != "prefix" {
			t.Fatalf("AppendJSON failed (%v) but returned %q, not the slice it was given", err, got)
		}
		return
	}
	if string(got[len("prefix"):]) != string(want) {
		t.Fatalf("AppendJSON wrote\n%s\nencoding/json writes\n%s", got[len("prefix"):], want)
	}
}

func TestPackAppendJSON(t *testing.T) {
	sig := h4r.Signals{0.7, 5e-10, 0, 0.99, 0, 0.28, 0.8, 0.85}
	for _, tc := range []struct {
		name string
		pack h4r.Pack
	}{
		{"zero pack", h4r.Pack{}},
		{"every field set", func() (p h4r.Pack) { (&filler{}).fill(reflect.ValueOf(&p).Elem()); return p }()},
		{"signals not finite", h4r.Pack{Results: []h4r.Result{{ID: "a", Signals: &h4r.Signals{math.NaN()}}}}},
		{"weights infinite", h4r.Pack{Explainability: h4r.Explainability{Weights: h4r.Weights{math.Inf(1)}}}},
		{"score not finite", h4r.Pack{Results: []h4r.Result{{ID: "a", Score: math.Inf(-1), Signals: &sig}}}},
		{"content refused by encoding/json", h4r.Pack{Results: []h4r.Result{{ID: "a", Content: map[string]any{"f": func() {}}}}}},
		{"empty lists and maps", h4r.Pack{
			Results: []h4r.Result{}, SourceNames: []string{}, Sources: map[string]h4r.SourceStats{},
			AgentSlice:     h4r.AgentSlice{ItemIDs: []string{}, Actions: []string{}},
			Explainability: h4r.Explainability{Affordances: []h4r.Affordance{}, Warnings: []string{}, Items: []h4r.ItemExplanation{}, CausalGraph: &h4r.CausalGraph{}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { requireSameJSON(t, &tc.pack) })
	}
}

// TestPackAppendJSONGoldens re-encodes the server's golden pack: the
// shape real requests produce.
func TestPackAppendJSONGoldens(t *testing.T) {
	for _, file := range []string{"server/testdata/context_pack.golden.json"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var p h4r.Pack
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatalf("reading the golden pack: %v", err)
			}
			if len(p.Results) == 0 {
				t.Fatal("the golden pack has no results")
			}
			requireSameJSON(t, &p)
		})
	}
}

func FuzzPackAppendJSON(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte("every field, chosen by these bytes"))
	f.Fuzz(func(t *testing.T, choices []byte) {
		var p h4r.Pack
		(&filler{in: choices}).fill(reflect.ValueOf(&p).Elem())
		requireSameJSON(t, &p)
	})
}

// BenchmarkPackJSON writes the server's golden pack with encoding/json,
// the path AppendJSON replaced, and with AppendJSON.
func BenchmarkPackJSON(b *testing.B) {
	raw, err := os.ReadFile("server/testdata/context_pack.golden.json")
	if err != nil {
		b.Fatal(err)
	}
	var p h4r.Pack
	if err := json.Unmarshal(raw, &p); err != nil {
		b.Fatal(err)
	}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := json.NewEncoder(&buf).Encode(&p); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(buf.Len()))
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var out []byte
		for b.Loop() {
			if out, err = p.AppendJSON(out[:0]); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(out)))
	})
}
