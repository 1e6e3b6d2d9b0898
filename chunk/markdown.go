package chunk

import (
	"path"
	"regexp"
	"strings"
)

// mdLink finds inline Markdown link targets: [text](target "title").
var mdLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)

// Markdown cuts src at its ATX headings; each chunk carries its heading
// path. Lines inside fenced code blocks are never headings.
func (s *Splitter) Markdown(src string) []Chunk {
	ls := lines(src)
	var spans []span
	var path []string
	cur := span{}
	fence := ""
	for i, l := range ls {
		t := strings.TrimLeft(l, " ")
		if len(l)-len(t) <= 3 {
			if f := fenceOf(t); f != "" {
				switch {
				case fence == "":
					fence = f
				case strings.HasPrefix(f, fence) && strings.TrimSpace(strings.TrimLeft(t, f[:1])) == "":
					fence = ""
				}
				continue
			}
		}
		if fence != "" {
			continue
		}
		level, title := heading(l)
		if level == 0 {
			continue
		}
		cur.end = i
		spans = append(spans, cur)
		if level-1 < len(path) {
			path = path[:level-1]
		}
		for len(path) < level-1 {
			path = append(path, "") // a skipped level: "# A" then "### C"
		}
		path = append(path, title)
		cur = span{start: i, heading: compact(path)}
	}
	cur.end = len(ls)
	spans = append(spans, cur)
	for i := range spans {
		spans[i].refs = markdownRefs(ls[spans[i].start:spans[i].end])
	}
	return s.emit(ls, spans)
}

// fenceOf returns the fence a line opens or closes (``` or ~~~, three or
// more), or "".
func fenceOf(t string) string {
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// heading returns an ATX heading's level and title, or 0.
func heading(l string) (int, string) {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 {
		return 0, ""
	}
	n := len(t) - len(strings.TrimLeft(t, "#"))
	if n < 1 || n > 6 || (len(t) > n && t[n] != ' ' && t[n] != '\t') {
		return 0, ""
	}
	title := strings.TrimSpace(t[n:])
	title = strings.TrimSpace(strings.TrimRight(title, "#"))
	if title == "" {
		return 0, ""
	}
	return n, title
}

func compact(p []string) []string {
	out := make([]string, 0, len(p))
	for _, s := range p {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// markdownRefs returns the relative link targets in ls (no scheme, no
// pure anchors), without their #fragment, cleaned.
func markdownRefs(ls []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range ls {
		for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
			t := m[1]
			if strings.Contains(t, "://") || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			if i := strings.IndexAny(t, "#?"); i >= 0 {
				t = t[:i]
			}
			if t == "" {
				continue
			}
			t = path.Clean(t)
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}
