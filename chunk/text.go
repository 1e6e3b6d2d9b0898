package chunk

import "strings"

// Text cuts prose by paragraph (blank-line separated), packed up to the
// budget; each chunk after the first starts with the previous chunk's last
// lines, up to the overlap budget, so that a sentence cut at a chunk's end
// is whole in the next.
func (s *Splitter) Text(src string) []Chunk {
	ls := lines(src)
	var paras []span
	start := -1
	for i, l := range ls {
		switch {
		case blank(l) && start >= 0:
			paras = append(paras, span{start: start, end: i})
			start = -1
		case !blank(l) && start < 0:
			start = i
		}
	}
	if start >= 0 {
		paras = append(paras, span{start: start, end: len(ls)})
	}
	var out []Chunk
	cur := span{start: -1}
	used := 0
	flush := func() {
		if cur.start < 0 {
			return
		}
		out = append(out, s.fit(ls, cur, s.overlap)...)
		cur = span{start: -1}
	}
	for _, p := range paras {
		n := s.counter.Count(strings.Join(ls[p.start:p.end], "\n"))
		if cur.start >= 0 && used+n+1 <= s.maxTokens {
			cur.end = p.end
			used += n + 1
			continue
		}
		flush()
		cur, used = p, n
		if len(out) > 0 {
			// Overlap: repeat the last lines of what came before.
			prev := out[len(out)-1]
			back, from := 0, p.start
			for from > prev.StartLine && from-1 >= 0 {
				l := ls[from-1]
				c := s.counter.Count(l) + 1
				if back+c+used > s.maxTokens || back+c > s.overlap {
					break
				}
				back += c
				from--
			}
			for from < p.start && blank(ls[from]) {
				from++
			}
			if from < p.start {
				cur.start = from
				used += back
			}
		}
	}
	flush()
	return out
}
