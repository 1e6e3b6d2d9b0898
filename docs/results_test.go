package docs

import (
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

// resultsLink finds the links of docs/benchmarks.md into bench/results/.
var resultsLink = regexp.MustCompile(`\]\(\.\./(bench/results/[^)#]*)\)`)

// TestBenchmarksListEveryResult fails when a dated results file is linked
// from docs/benchmarks.md neither by itself nor by its day's folder: a
// figure nobody can find from the manual is as good as lost.
func TestBenchmarksListEveryResult(t *testing.T) {
	page, err := os.ReadFile("benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range resultsLink.FindAllStringSubmatch(string(page), -1) {
		linked[strings.TrimSuffix(m[1], "/")] = true
	}
	if len(linked) == 0 {
		t.Fatal("docs/benchmarks.md links no results: the check would prove nothing")
	}
	root := ".."
	for _, f := range trackedFiles(t, root) {
		if !strings.HasPrefix(f, "bench/results/") || path.Ext(f) != ".md" {
			continue
		}
		if !linked[f] && !linked[path.Dir(f)] {
			t.Errorf("%s is linked from docs/benchmarks.md neither by itself nor by its folder", f)
		}
	}
	for l := range linked {
		if _, err := os.Stat("../" + l); err != nil {
			t.Errorf("docs/benchmarks.md links %s, which does not exist", l)
		}
	}
}
