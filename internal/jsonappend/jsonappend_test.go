package jsonappend_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/h4r/h4r/internal/jsonappend"
)

func TestStringAsEncodingJSON(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"plain", "kepeto galuvisu"},
		{"quote and backslash", `say "hi" \ bye`},
		{"html", "<script>a && b</script>"},
		{"named controls", "\b\f\n\r\t"},
		{"other controls", "\x00\x01\x1f\x7f"},
		{"invalid utf8", "a\xffb\xc3"},
		{"line separators", "a\u2028b\u2029c"},
		{"multibyte", "naïve 日本語 🙂"},
		{"replacement char itself", "\ufffd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := jsonappend.String(nil, tc.in); string(got) != string(want) {
				t.Errorf("String(%q) = %s, encoding/json writes %s", tc.in, got, want)
			}
		})
	}
}

func TestFloatAsEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   float64
	}{
		{"zero", 0},
		{"negative zero", math.Copysign(0, -1)},
		{"integer", 42},
		{"fraction", 0.49890116084894315},
		{"just under the exponent form", 1e-6},
		{"exponent form small", 5.465077542396811e-10},
		{"exponent form one digit", 1e-7},
		{"just under 1e21", 999999999999999900000},
		{"exponent form large", 1e21},
		{"exponent form huge", 1.5e300},
		{"smallest", math.SmallestNonzeroFloat64},
		{"negative small", -3e-8},
		{"largest", math.MaxFloat64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jsonappend.Float(nil, tc.in)
			if err != nil || string(got) != string(want) {
				t.Errorf("Float(%v) = %s, %v; encoding/json writes %s", tc.in, got, err, want)
			}
		})
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got, err := jsonappend.Float([]byte("x"), bad); err == nil || string(got) != "x" {
			t.Errorf("Float(%v) = %q, %v; want an error and nothing appended", bad, got, err)
		}
	}
}

func TestStringsNilIsNull(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
	}{{"nil", nil}, {"empty", []string{}}, {"two", []string{"a", "<b>"}}} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := json.Marshal(tc.in)
			if got := jsonappend.Strings(nil, tc.in); string(got) != string(want) {
				t.Errorf("Strings(%q) = %s, encoding/json writes %s", tc.in, got, want)
			}
		})
	}
}

func FuzzStringAndFloat(f *testing.F) {
	f.Add("a<b>&\u2028\xff\x01", 1e-7)
	f.Add("", 0.1)
	f.Add("日本\"\\", 1e21)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		want, _ := json.Marshal(s)
		if got := jsonappend.String(nil, s); string(got) != string(want) {
			t.Fatalf("String(%q) = %s, encoding/json writes %s", s, got, want)
		}
		want, werr := json.Marshal(x)
		got, err := jsonappend.Float(nil, x)
		if (err != nil) != (werr != nil) || (err == nil && string(got) != string(want)) {
			t.Fatalf("Float(%v) = %s, %v; encoding/json writes %s, %v", x, got, err, want, werr)
		}
	})
}
