package pack

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGoldenPack builds the fixture pack and compares it with
// testdata/pack.golden.json. Run `go test ./pack -run Golden -update` after
// an intended change and review the diff.
func TestGoldenPack(t *testing.T) {
	const path = "testdata/pack.golden.json"
	p := NewBuilder(WithClock(fixedClock)).Build(fixtureInput(t))
	got, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	// Compare numbers to 9 significant digits, so that a platform whose
	// math.Exp or fused multiply-add differs in the last bit still passes.
	if !reflect.DeepEqual(roundedJSON(t, got), roundedJSON(t, want)) {
		t.Errorf("pack differs from %s (run with -update to accept):\n%s", path, got)
	}
}

func roundedJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var round func(any) any
	round = func(v any) any {
		switch x := v.(type) {
		case float64:
			return fmt.Sprintf("%.9g", x)
		case map[string]any:
			for k, e := range x {
				x[k] = round(e)
			}
		case []any:
			for i, e := range x {
				x[i] = round(e)
			}
		}
		return v
	}
	return round(v)
}
