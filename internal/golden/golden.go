package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Text checks got against the file at path byte for byte, or writes it
// when update is set.
func Text(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	want, ok := read(t, path, got, update)
	if ok && !bytes.Equal(got, want) {
		t.Errorf("%s differs; if the change is intended, rerun with -update and review the diff.\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// JSON checks v, encoded as indented JSON, against the file at path, or
// writes it when update is set. Numbers are compared to 9 significant
// digits, so that a platform whose math.Exp or fused multiply-add differs in
// the last bit still passes.
func JSON(t testing.TB, path string, v any, update bool) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	want, ok := read(t, path, got, update)
	if !ok || bytes.Equal(got, want) {
		return
	}
	if !reflect.DeepEqual(rounded(t, got), rounded(t, want)) {
		t.Errorf("%s differs; if the change is intended, rerun with -update and review the diff.\ngot:\n%s", path, got)
	}
}

// read returns the golden file, after writing got to it when update is set.
func read(t testing.TB, path string, got []byte, update bool) ([]byte, bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return nil, false
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	return want, true
}

func rounded(t testing.TB, b []byte) any {
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
