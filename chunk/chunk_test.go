package chunk

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r/tokens"
)

var counterOnce = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New(tokens.CL100K) })

func counter(t testing.TB) *tokens.Counter {
	t.Helper()
	c, err := counterOnce()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkChunks asserts what every chunker promises: chunks in order, line
// ranges inside the source, content taken from those lines, within the
// budget, never empty.
func checkChunks(t *testing.T, s *Splitter, src string, chunks []Chunk) {
	t.Helper()
	ls := lines(strings.ToValidUTF8(src, "\uFFFD"))
	prevStart := 0
	for i, c := range chunks {
		if c.StartLine < 1 || c.EndLine < c.StartLine || c.EndLine > len(ls) {
			t.Fatalf("chunk %d: line range %d-%d outside 1-%d", i, c.StartLine, c.EndLine, len(ls))
		}
		if c.StartLine < prevStart {
			t.Fatalf("chunk %d starts at line %d, before chunk %d's start %d", i, c.StartLine, i-1, prevStart)
		}
		prevStart = c.StartLine
		if strings.TrimSpace(c.Content) == "" {
			t.Fatalf("chunk %d is empty", i)
		}
		if !strings.Contains(strings.Join(ls[c.StartLine-1:c.EndLine], "\n"), c.Content) {
			t.Fatalf("chunk %d content %q is not in its lines %d-%d", i, c.Content, c.StartLine, c.EndLine)
		}
		if n := s.counter.Count(c.Content); n > s.maxTokens {
			t.Fatalf("chunk %d has %d tokens, budget %d", i, n, s.maxTokens)
		}
	}
}

func TestMarkdownHeadingPaths(t *testing.T) {
	src := "Intro line.\n\n# Policy\n\nThe slicer.\n\n## Budgets\n\nTokens are counted.\n\n```sh\n# not a heading\n```\n\n### Tokens ###\n\nExact tiktoken, see [the code](scs/slicer.go#L10) and [site](https://x.y/z).\n\n# Security\n\nKeys.\n"
	s := New(counter(t))
	got := s.Markdown(src)
	checkChunks(t, s, src, got)
	want := []struct {
		heading    string
		start, end int
	}{
		{"", 1, 1},
		{"Policy", 3, 5},
		{"Policy › Budgets", 7, 13},
		{"Policy › Budgets › Tokens", 15, 17},
		{"Security", 19, 21},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d chunks, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if h := strings.Join(got[i].Heading, " › "); h != w.heading || got[i].StartLine != w.start || got[i].EndLine != w.end {
			t.Errorf("chunk %d: %q %d-%d, want %q %d-%d", i, h, got[i].StartLine, got[i].EndLine, w.heading, w.start, w.end)
		}
	}
	if refs := got[3].Refs; len(refs) != 1 || refs[0] != "scs/slicer.go" {
		t.Errorf("refs of the Tokens section = %q, want [scs/slicer.go]", refs)
	}
}

func TestGoDeclarations(t *testing.T) {
	src := `// Package x is a test.
package x

import (
	"fmt"
	"github.com/h4r/h4r/tokens"
)

// Limits bound a pack.
type Limits struct{ MaxTokens int }

// Slice cuts items to the limits.
func (l *Limits) Slice() { fmt.Println(tokens.CL100K) }

const (
	A = 1
	B = 2
)
// trailing
`
	s := New(counter(t))
	got := s.Go(src)
	checkChunks(t, s, src, got)
	want := []struct {
		decl       string
		start, end int
	}{
		{"package x", 1, 7},
		{"type Limits", 9, 10},
		{"func (l *Limits) Slice", 12, 13},
		{"const A, B", 15, 19},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d chunks, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Decl != w.decl || got[i].StartLine != w.start || got[i].EndLine != w.end {
			t.Errorf("chunk %d: %q %d-%d, want %q %d-%d", i, got[i].Decl, got[i].StartLine, got[i].EndLine, w.decl, w.start, w.end)
		}
	}
	if r := got[0].Refs; len(r) != 2 || r[1] != "github.com/h4r/h4r/tokens" {
		t.Errorf("import refs = %q", r)
	}
}

func TestGoThatDoesNotParseFallsBackToHeuristic(t *testing.T) {
	src := "package x\n\nfunc broken( {\n\treturn\n}\n\nfunc other() {}\n"
	s := New(counter(t))
	got := s.Go(src)
	checkChunks(t, s, src, got)
	if len(got) == 0 {
		t.Fatal("no chunks for a file that does not parse")
	}
}

func TestCodeHeuristicBlocks(t *testing.T) {
	py := "import os\n\n\ndef a():\n    return 1\n\n    # still a\n\nclass B:\n    def m(self):\n        pass\n"
	s := New(counter(t), WithMaxTokens(16))
	got := s.Code(py)
	checkChunks(t, s, py, got)
	// "import os" and def a() fit the budget together; class B does
	// not fit after them; the indented comment stays inside def a().
	var decls []string
	for _, c := range got {
		decls = append(decls, fmt.Sprintf("%s %d-%d", c.Decl, c.StartLine, c.EndLine))
	}
	if strings.Join(decls, "|") != "import os 1-7|class B 9-11" {
		t.Errorf("decls = %q, want import os 1-7|class B 9-11", decls)
	}
}

func TestTextBudgetAndOverlap(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		b.WriteString(strings.Repeat("word ", 10))
		b.WriteString("end.\n")
		if i%3 == 2 {
			b.WriteString("\n")
		}
	}
	src := b.String()
	s := New(counter(t), WithMaxTokens(60), WithOverlapTokens(15))
	got := s.Text(src)
	checkChunks(t, s, src, got)
	if len(got) < 5 {
		t.Fatalf("got %d chunks of a %d-token text with a 60-token budget", len(got), s.counter.Count(src))
	}
	overlapped := 0
	for i := 1; i < len(got); i++ {
		if got[i].StartLine <= got[i-1].EndLine {
			overlapped++
		}
	}
	if overlapped == 0 {
		t.Error("no chunk overlaps its predecessor")
	}
}

func TestLongLineIsCutWithinBudget(t *testing.T) {
	src := strings.Repeat("supercalifragilistic ", 300)
	s := New(counter(t), WithMaxTokens(32))
	for name, got := range map[string][]Chunk{"text": s.Text(src), "code": s.Code(src), "markdown": s.Markdown(src)} {
		t.Run(name, func(t *testing.T) {
			checkChunks(t, s, src, got)
			if len(got) < 2 {
				t.Fatalf("got %d chunks", len(got))
			}
		})
	}
}

func TestContextual(t *testing.T) {
	c := Chunk{Content: "body", Heading: []string{"Policy", "Budgets"}}
	if got := Contextual("h4r", "README.md", c); got != "h4r: README.md › Policy › Budgets\n\nbody" {
		t.Errorf("got %q", got)
	}
	c = Chunk{Content: "body", Decl: "func Slice"}
	if got := Contextual("", "scs/slicer.go", c); got != "scs/slicer.go · func Slice\n\nbody" {
		t.Errorf("got %q", got)
	}
}

func TestKind(t *testing.T) {
	for name, want := range map[string]string{"README.md": KindMarkdown, "a/b.go": KindGo, "x.py": KindCode, "NOTES": KindText, "n.txt": KindText} {
		if got := Kind(name); got != want {
			t.Errorf("Kind(%q) = %q, want %q", name, got, want)
		}
	}
}
