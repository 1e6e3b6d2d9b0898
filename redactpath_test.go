package h4r_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

func TestParseRedactionPath(t *testing.T) {
	name := func(n string) h4r.PathStep { return h4r.PathStep{Kind: h4r.StepName, Name: n} }
	index := func(i int) h4r.PathStep { return h4r.PathStep{Kind: h4r.StepIndex, Index: i} }
	wild := h4r.PathStep{Kind: h4r.StepWildcard}
	cases := []struct {
		name  string
		path  string
		root  string
		steps []h4r.PathStep
	}{
		{"text", "$.text", h4r.RootText, nil},
		{"whole content", "$.content", h4r.RootContent, nil},
		{"nested names", "$.content.a.b", h4r.RootContent, []h4r.PathStep{name("a"), name("b")}},
		{"index", "$.content.list[0]", h4r.RootContent, []h4r.PathStep{name("list"), index(0)}},
		{"negative index", "$.content.list[-1]", h4r.RootContent, []h4r.PathStep{name("list"), index(-1)}},
		{"wildcard then name", "$.content.list[*].email", h4r.RootContent, []h4r.PathStep{name("list"), wild, name("email")}},
		{"dot wildcard", "$.content.map.*", h4r.RootContent, []h4r.PathStep{name("map"), wild}},
		{"single-quoted name with spaces", "$.content['key with spaces']", h4r.RootContent, []h4r.PathStep{name("key with spaces")}},
		{"double-quoted name", `$.content["k"]`, h4r.RootContent, []h4r.PathStep{name("k")}},
		{"quoted name with escapes and dots", `$.content['it\'s a.b[0]']`, h4r.RootContent, []h4r.PathStep{name("it's a.b[0]")}},
		{"quoted root", "$['content'].a", h4r.RootContent, []h4r.PathStep{name("a")}},
		{"name with dash, underscore and digits", "$.content.user_1-x", h4r.RootContent, []h4r.PathStep{name("user_1-x")}},
		{"unicode name", "$.content.données", h4r.RootContent, []h4r.PathStep{name("données")}},
		{"empty quoted name", "$.content['']", h4r.RootContent, []h4r.PathStep{name("")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := h4r.ParseRedactionPath(tc.path)
			if err != nil {
				t.Fatalf("h4r.ParseRedactionPath(%q): %v", tc.path, err)
			}
			if p.Root() != tc.root || !reflect.DeepEqual(p.Steps(), tc.steps) || p.String() != tc.path {
				t.Errorf("h4r.ParseRedactionPath(%q) = root %q steps %+v string %q, want root %q steps %+v", tc.path, p.Root(), p.Steps(), p.String(), tc.root, tc.steps)
			}
		})
	}
}

func TestParseRedactionPathRejects(t *testing.T) {
	cases := []struct {
		name    string
		path    string
		wantMsg string
	}{
		{"empty", "", "must start with $"},
		{"no dollar", "content.a", "must start with $"},
		{"dollar alone", "$", "names no field"},
		{"metadata root", "$.metadata.owner", "must start with $.text or $.content"},
		{"id root", "$.id", "must start with $.text or $.content"},
		{"wildcard root", "$.*", "must start with $.text or $.content"},
		{"index root", "$[0]", "must start with $.text or $.content"},
		{"into text", "$.text.first", "text is a string"},
		{"recursive descent", "$..email", "recursive descent"},
		{"trailing dot", "$.content.", "expected a name after '.'"},
		{"space in dot name", "$.content.key with spaces", "expected '.' or '['"},
		{"unterminated bracket", "$.content[", "unterminated '['"},
		{"unterminated index", "$.content.list[12", "unterminated '['"},
		{"unterminated quote", "$.content['abc", "unterminated quoted name"},
		{"quote without bracket", "$.content['abc'x", "expected ']' after the quoted name"},
		{"bad escape", `$.content['a\nb']`, "escapes"},
		{"leading zero index", "$.content.list[01]", "index must be an integer"},
		{"minus zero index", "$.content.list[-0]", "index must be an integer"},
		{"plus index", "$.content.list[+1]", "expected *, an index or a quoted name"},
		{"huge index", "$.content.list[12345678901]", "index is too large"},
		{"slice", "$.content.list[0:2]", "index must be an integer"},
		{"filter", "$.content.list[?(@.a)]", "expected *, an index or a quoted name"},
		{"wildcard without bracket end", "$.content[*x", "expected ']' after '[*'"},
		{"too long", "$.content." + strings.Repeat("a", h4r.MaxPathBytes), "longer than"},
		{"too many steps", "$.content" + strings.Repeat(".a", h4r.MaxPathSteps), "more than"},
		{"invalid UTF-8", "$.content.\xff", "not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := h4r.ParseRedactionPath(tc.path)
			if err == nil {
				t.Fatalf("h4r.ParseRedactionPath(%q) = %+v, want an error", tc.path, p)
			}
			if h4r.ErrorCode(err) != h4r.EINVALID || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q, want an invalid_argument containing %q", err, tc.wantMsg)
			}
			if !strings.Contains(err.Error(), "path") {
				t.Errorf("error %q does not name the path", err)
			}
		})
	}
}

// FuzzParsePath: no panics; a parsed path keeps its text, and a path built
// back from its steps parses to the same steps.
func FuzzParseRedactionPath(f *testing.F) {
	for _, seed := range []string{
		"$.text", "$.content.a.b", "$.content.list[0]", "$.content.list[*].email",
		"$.content['key with spaces']", `$.content["k"]`, "$..x", "$.content[-1]", `$.content['a\'b']`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := h4r.ParseRedactionPath(raw)
		if err != nil {
			return
		}
		if p.String() != raw {
			t.Fatalf("String() = %q, want %q", p.String(), raw)
		}
		if p.Root() != h4r.RootText && p.Root() != h4r.RootContent {
			t.Fatalf("root %q", p.Root())
		}
		again, err := h4r.ParseRedactionPath(canonical(p))
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canonical(p), raw, err)
		}
		if !reflect.DeepEqual(again.Steps(), p.Steps()) || again.Root() != p.Root() {
			t.Fatalf("canonical form %q parses to %+v, want %+v", canonical(p), again.Steps(), p.Steps())
		}
	})
}

// canonical writes p with every name quoted.
func canonical(p h4r.RedactionPath) string {
	var b strings.Builder
	b.WriteString("$." + p.Root())
	for _, s := range p.Steps() {
		switch s.Kind {
		case h4r.StepName:
			r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
			b.WriteString("['" + r.Replace(s.Name) + "']")
		case h4r.StepIndex:
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
		case h4r.StepWildcard:
			b.WriteString("[*]")
		}
	}
	return b.String()
}
