package h4r

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// scanAgrees checks that where scanVector reads b, the general reading
// reads it too, to the same values; where it does not, v is untouched.
func scanAgrees(t *testing.T, b []byte) (scanned bool) {
	t.Helper()
	start := [NumSignals]float64{9, 9, 9, 9, 9, 9, 9, 9}
	fast, slow := start, start
	ok := scanVector(b, &fast)
	if !ok {
		if fast != start {
			t.Fatalf("%q: scanVector declined but changed the vector to %v", b, fast)
		}
		return false
	}
	if err := decodeVector(b, &slow); err != nil {
		t.Fatalf("%q: scanVector read %v, the general reading refused it: %v", b, fast, err)
	}
	if fast != slow {
		t.Fatalf("%q: scanVector read %v, the general reading %v", b, fast, slow)
	}
	return true
}

func TestScanVector(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		fast bool // scanVector reads it (else the general reading decides)
	}{
		{"marshalled", string(must(Signals{0.5, 1, 0, 0.25, 1e-7, 0.125, 1, 0.3333333333333333}.MarshalJSON())), true},
		{"spaces", " {\n \"relevance\" : 0.6 ,\t\"recency\":-1.5E+2 } ", true},
		{"empty", "{}", true},
		{"repeated key, last wins", `{"trust": 0.1, "trust": 0.9}`, true},
		{"unknown key", `{"relevence": 0.6}`, false},
		{"case", `{"Relevance": 0.6}`, false},
		{"escaped key", `{"rel\u0065vance": 0.6}`, false},
		{"string value", `{"relevance": "0.6"}`, false},
		{"null", `{"relevance": null}`, false},
		{"leading zero", `{"relevance": 01}`, false},
		{"bare dot", `{"relevance": 1.}`, false},
		{"plus", `{"relevance": +1}`, false},
		{"out of range", `{"relevance": 1e400}`, false},
		{"trailing comma", `{"relevance": 1,}`, false},
		{"trailing bytes", `{"relevance": 1} x`, false},
		{"array", `[1, 2]`, false},
		{"unclosed", `{"relevance": 1`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scanAgrees(t, []byte(tc.in)); got != tc.fast {
				t.Fatalf("%q: scanVector read it: %v, want %v", tc.in, got, tc.fast)
			}
		})
	}
}

func FuzzScanVector(f *testing.F) {
	for _, s := range []string{`{"relevance": 0.6, "recency": 0.4}`, `{}`, `{"trust":-0e-3}`, `{"novelty": 1, "novelty": 2}`, `{"x": 1}`, `{"causality": 1.5e+300 }`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { scanAgrees(t, b) })
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestMarshalVectorFormat: the appended form is the one fmt's %q and
// FormatFloat write, value for value.
func TestMarshalVectorFormat(t *testing.T) {
	for _, s := range []Signals{{}, {1, 0.5, 0.25, 1e-9, 123456789.125, 0.1, 2.5e-300, 1}, {0.7, 0.9999999, 1e21, 0, 0, 0, 0}} {
		got := must(s.MarshalJSON())
		var want strings.Builder
		want.WriteByte('{')
		for i, x := range s {
			if i > 0 {
				want.WriteByte(',')
			}
			fmt.Fprintf(&want, "%q:%s", Signal(i).String(), strconv.FormatFloat(x, 'f', -1, 64))
		}
		want.WriteByte('}')
		if string(got) != want.String() {
			t.Fatalf("got %s, want %s", got, want.String())
		}
	}
}
