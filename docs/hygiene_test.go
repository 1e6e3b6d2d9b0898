package docs

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// forbidden are phrases that narrate history or point outside the
// repository. A reader of a file in this repository can follow neither.
var forbidden = []struct {
	name string
	re   *regexp.Regexp
}{
	{"a development round", regexp.MustCompile(`(?i)\b(this|last|previous|next|earlier|later|first|second|third|fourth|fifth) rounds?\b|\bround \d`)},
	{"an issue number", regexp.MustCompile(`(?i)\bissues? #?\d+\b`)},
	{"a design document outside the repository", regexp.MustCompile(`(?i)\b(document|doc|seed) ?0\d\d\b|\bDESIGN\.md\b|\bseeds/|\bshared/(seeds|DESIGN)|\bdesign card\b|\boriginal design\b|\bthe design['’]s\b`)},
	{"the issue a change was made for", regexp.MustCompile(`(?i)\bthe issue['’]s\b`)},
	{"an architecture decision record outside the repository", regexp.MustCompile(`\bADR\b`)},
	{"a development branch", regexp.MustCompile("(^|[\\s(`\"'])h-[a-z]{2,}([\\s).,;:'`\"]|$)")},
}

// hexWord finds words that could be abbreviated commit hashes.
var hexWord = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)

// exempt are files whose lines may match: this test names the patterns.
var exempt = map[string]bool{
	"docs/hygiene_test.go": true,
}

func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("listing the tracked files with git ls-files: %v (the check needs git and a clone)", err)
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files
}

// commitHashes are the full hashes of every commit in the clone, so that a
// hex word in prose is flagged only when it abbreviates one of them (a SHA
// in an example such as "deadbeef" is not).
func commitHashes(t *testing.T, root string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "rev-list", "--all").Output()
	if err != nil {
		t.Fatalf("listing the commits with git rev-list: %v", err)
	}
	return strings.Fields(string(out))
}

// TestNoHistoryOrOutsideReferences fails on any tracked text file that
// names a development round, an issue number, a commit of this repository,
// or a design document that is not in it. Comments say why the code is as
// it is now; history belongs to git.
func TestNoHistoryOrOutsideReferences(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	commits := commitHashes(t, root)
	isCommit := func(w string) bool {
		for _, c := range commits {
			if strings.HasPrefix(c, w) {
				return true
			}
		}
		return false
	}
	var found int
	for _, name := range trackedFiles(t, root) {
		if exempt[name] || !isText(name) {
			continue
		}
		f, err := os.Open(filepath.Join(root, name))
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			for _, p := range forbidden {
				if m := p.re.FindString(line); m != "" {
					found++
					t.Errorf("%s:%d names %s (%q): say what is true now, and leave history to git", name, n, p.name, m)
				}
			}
			for _, w := range hexWord.FindAllString(line, -1) {
				if isCommit(w) {
					found++
					t.Errorf("%s:%d names commit %s of this repository: leave history to git", name, n, w)
				}
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		if found > 200 {
			t.Fatal("more than 200 findings; stopping")
		}
	}
}

// isText says whether a file is prose or code worth checking: data files
// (corpora, goldens, fuzz inputs) are not.
func isText(name string) bool {
	if strings.Contains(name, "/testdata/") || strings.HasPrefix(name, "testdata/") {
		return false
	}
	switch filepath.Ext(name) {
	case ".go", ".md", ".rego", ".yaml", ".yml", ".toml", ".sh", ".mjs", ".js", ".ts", ".example", ".sql", ".json", ".html", ".css", ".tpl", ".py", ".txt", "":
		return true
	}
	return false
}

// TestForbiddenPatternsCatchPlantedText proves each pattern fires on the
// phrasing it is there for, and not on ordinary prose.
func TestForbiddenPatternsCatchPlantedText(t *testing.T) {
	tests := []struct {
		name, line string
		want       bool
	}{
		// The planted phrases are assembled so that this file does not
		// itself read as narration to other tools.
		{"the previous session", "// As last " + "round showed, the cache is faster.", true},
		{"the current session", "This " + "round adds tenants.", true},
		{"issue number", "// Fixes issue 12's leak.", true},
		{"issue hash", "see issue #7", true},
		{"document number", "document 001's bridge", true},
		{"design file", "as DESIGN.md says", true},
		{"design card", "The design " + "card calls this folder h4r", true},
		{"original design", "the original " + "design's deadline", true},
		{"the design's figure", "over the " + "design's 500 MB", true},
		{"the issue's rule", "by the " + "issue's rule keyword wins", true},
		{"the issue's done-when", "TestX is the " + "issue’s done-when", true},
		{"an ADR", "decision traces (" + "ADR 002)", true},
		{"the ADR", "the " + "ADR's presets", true},
		{"design in general", "the design does not pay there yet", false},
		{"an issue in general", "the issue is that the cache is cold", false},
		{"adr in a word", "an address such as dt-adr-1", false},
		{"a branch", "the int8 scan (" + "h-ann's index)", true},
		{"a branch merged", "main + " + "h-pgcache, keyword", true},
		{"an id with a prefix", "ids such as dt-h-ann-1 and h-1", false},
		{"arithmetic", "y = h-6", false},
		{"plain prose", "A round trip to Postgres takes a millisecond.", false},
		{"rounding", "scores are rounded to three decimals", false},
		{"issues in general", "known issues are listed in the operations guide", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := false
			for _, p := range forbidden {
				got = got || p.re.MatchString(tt.line)
			}
			if got != tt.want {
				t.Errorf("matched %v on %q, want %v", got, tt.line, tt.want)
			}
		})
	}
}
