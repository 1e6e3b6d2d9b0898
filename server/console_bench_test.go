package server

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

var updateBench = flag.Bool("update-bench", false, "copy the newest benchmark reports into server/console/bench")

// TestConsoleBenchCurrent: the reports the console embeds are the newest
// of bench/results, byte for byte (-args -update-bench copies them), and
// no chart holds script.
func TestConsoleBenchCurrent(t *testing.T) {
	results := os.DirFS(filepath.Join("..", "bench", "results"))
	want, err := ConsoleBenchSet(results)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 3 {
		t.Fatalf("the benchmark set holds %d files: %v", len(want), want)
	}
	if *updateBench {
		if err := os.RemoveAll(filepath.Join("console", "bench")); err != nil {
			t.Fatal(err)
		}
		for _, name := range want {
			b, err := fs.ReadFile(results, name)
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join("console", "bench", filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var have []string
	err = fs.WalkDir(os.DirFS(filepath.Join("console", "bench")), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			have = append(have, p)
		}
		return err
	})
	if err != nil {
		t.Fatalf("%v (go test ./server -run TestConsoleBenchCurrent -args -update-bench)", err)
	}
	slices.Sort(have)
	sorted := slices.Sorted(slices.Values(want))
	if !slices.Equal(have, sorted) {
		t.Fatalf("server/console/bench holds %v, want %v: go test ./server -run TestConsoleBenchCurrent -args -update-bench", have, sorted)
	}
	for _, name := range want {
		src, _ := fs.ReadFile(results, name)
		got, err := consoleFiles.ReadFile("console/bench/" + name)
		if err != nil || !bytes.Equal(src, got) {
			t.Errorf("the embedded %s differs from bench/results (err %v): go test ./server -run TestConsoleBenchCurrent -args -update-bench", name, err)
		}
		if strings.HasSuffix(name, ".svg") {
			if bad := scriptInSVG(got); bad != "" {
				t.Errorf("%s holds %q: a chart must not script", name, bad)
			}
		}
	}
}

// scriptInSVG returns the first mark of script in an SVG, or "".
func scriptInSVG(b []byte) string {
	low := strings.ToLower(string(b))
	for _, s := range []string{"<script", "javascript:", "<foreignobject", " onload", " onclick", " onerror", " onmouse", "xlink:href", " href="} {
		if strings.Contains(low, s) {
			return s
		}
	}
	return ""
}

func TestScriptInSVG(t *testing.T) {
	for _, tc := range []struct{ name, svg, want string }{
		{"chart", `<svg><polyline points="1,2"/><text>p50</text></svg>`, ""},
		{"script element", `<svg><script>alert(1)</script></svg>`, "<script"},
		{"handler", `<svg onload="alert(1)"></svg>`, " onload"},
		{"link", `<svg><a href="javascript:alert(1)">x</a></svg>`, "javascript:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scriptInSVG([]byte(tc.svg)); got != tc.want {
				t.Errorf("scriptInSVG = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConsoleBenchSetTakesTheNewestOfEachKind(t *testing.T) {
	fsys := fstest.MapFS{
		"2026-01-01/quality-a.md":   {Data: []byte("# old")},
		"2026-01-02/quality-b.md":   {Data: []byte("# new")},
		"2026-01-02/quality-b.json": {Data: []byte("{}")},
		"2026-01-01/latency-x.md":   {Data: []byte("# lat")},
		"2026-01-01/latency-x.svg":  {Data: []byte("<svg/>")},
		"2026-01-03/latency-y.svg":  {Data: []byte("<svg/>")}, // a chart alone is no report
		"2026-01-03/speed.md":       {Data: []byte("# other")},
	}
	got, err := ConsoleBenchSet(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-01-02/quality-b.md", "2026-01-01/latency-x.md", "2026-01-01/latency-x.svg"}
	if !slices.Equal(got, want) {
		t.Errorf("ConsoleBenchSet = %v, want %v", got, want)
	}
}

func TestMarkdownBlocks(t *testing.T) {
	src := "# Title\n\nOne line\nand another.\n\n| a | b |\n|---|--:|\n| 1 | <b>2</b> |\n\n- item one\n  continued\n\n```sh\nh4r bench\n```\n"
	got := markdownBlocks(src)
	kinds := make([]string, len(got))
	for i, b := range got {
		kinds[i] = b.Kind
	}
	if want := []string{"h", "p", "table", "li", "pre"}; !slices.Equal(kinds, want) {
		t.Fatalf("blocks %v, want %v", kinds, want)
	}
	if got[1].Text != "One line and another." || len(got[2].Rows) != 2 || got[2].Rows[1][1] != "<b>2</b>" ||
		got[3].Text != "item one continued" || got[4].Text != "h4r bench" || got[0].Level != 2 {
		t.Errorf("blocks %+v", got)
	}
}
