package chunk

import "strings"

// Code cuts source in a language without a parser here by the heuristic
// of the package doc: blocks start at an unindented line after a blank
// line; consecutive blocks are packed up to the budget. A chunk's Decl is
// the first line of its first block that is not a comment.
func (s *Splitter) Code(src string) []Chunk {
	ls := lines(src)
	var blocks []span
	start := 0
	for i := 1; i < len(ls); i++ {
		if blank(ls[i-1]) && startsBlock(ls[i]) {
			blocks = append(blocks, span{start: start, end: i})
			start = i
		}
	}
	if len(ls) > 0 {
		blocks = append(blocks, span{start: start, end: len(ls)})
	}
	return s.emit(ls, s.pack(ls, blocks, func(b span) string { return firstCodeLine(ls[b.start:b.end]) }))
}

// pack merges consecutive spans while the merged text stays within the
// budget; the merged span keeps the first one's name.
func (s *Splitter) pack(ls []string, blocks []span, name func(span) string) []span {
	var out []span
	used := 0
	for _, b := range blocks {
		n := s.counter.Count(strings.Join(ls[b.start:b.end], "\n"))
		if len(out) > 0 && used+n <= s.maxTokens {
			out[len(out)-1].end = b.end
			used += n
			continue
		}
		b.decl = name(b)
		out = append(out, b)
		used = n
	}
	return out
}

// startsBlock: an unindented line that does not close a block.
func startsBlock(l string) bool {
	if l == "" || l[0] == ' ' || l[0] == '\t' {
		return false
	}
	t := strings.TrimSpace(l)
	switch {
	case t == "", strings.HasPrefix(t, "}"), strings.HasPrefix(t, ")"), strings.HasPrefix(t, "]"),
		t == "end", strings.HasPrefix(t, "end "), t == "fi", t == "done", t == "esac":
		return false
	}
	return true
}

func firstCodeLine(ls []string) string {
	for _, l := range ls {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "//") || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "/*") ||
			strings.HasPrefix(t, "*") || strings.HasPrefix(t, "--") || strings.HasPrefix(t, `"""`) {
			continue
		}
		t = strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(t, "{")), ":")
		if r := []rune(t); len(r) > 80 {
			t = string(r[:80]) + "…"
		}
		return t
	}
	return ""
}
