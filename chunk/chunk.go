package chunk

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/h4r/h4r/tokens"
)

// Defaults of a Splitter.
const (
	DefaultMaxTokens     = 400
	DefaultOverlapTokens = 50
)

// Chunk is one piece of a file.
type Chunk struct {
	Content   string   // the raw text, as in the file
	StartLine int      // 1-based, inclusive
	EndLine   int      // 1-based, inclusive
	Heading   []string // Markdown: the heading path, outermost first
	Decl      string   // code: the enclosing top-level declaration ("func (s *Slicer) Slice")
	Refs      []string // what the chunk refers to: Go import paths, relative Markdown link targets
}

// Kinds of file, chosen by Kind from the path.
const (
	KindMarkdown = "markdown"
	KindGo       = "go"
	KindCode     = "code"
	KindText     = "text"
)

// Counter counts tokens (tokens.Counter).
type Counter interface {
	Count(text string) int
}

var _ Counter = (*tokens.Counter)(nil)

// Splitter cuts files into chunks. It is safe for concurrent use.
type Splitter struct {
	counter   Counter
	maxTokens int
	overlap   int
}

// Option configures a Splitter.
type Option func(*Splitter)

// WithMaxTokens sets the token budget of one chunk's content.
func WithMaxTokens(n int) Option { return func(s *Splitter) { s.maxTokens = n } }

// WithOverlapTokens sets how many tokens of a text chunk's end the next text
// chunk repeats (whole lines, at most this many tokens).
func WithOverlapTokens(n int) Option { return func(s *Splitter) { s.overlap = n } }

// New returns a Splitter counting with counter.
func New(counter Counter, opts ...Option) *Splitter {
	s := &Splitter{counter: counter, maxTokens: DefaultMaxTokens, overlap: DefaultOverlapTokens}
	for _, o := range opts {
		o(s)
	}
	s.maxTokens = max(s.maxTokens, 16)
	s.overlap = min(max(s.overlap, 0), s.maxTokens/2)
	return s
}

// MaxTokens returns the budget of one chunk.
func (s *Splitter) MaxTokens() int { return s.maxTokens }

// Kind says how a file is chunked, from its name.
func Kind(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown", ".mdx":
		return KindMarkdown
	case ".go":
		return KindGo
	case ".txt", ".text", ".rst", ".adoc", "":
		return KindText
	}
	return KindCode
}

// Split cuts src, the contents of the file name, by the kind Kind gives.
// Invalid UTF-8 is replaced, so that every chunk is valid text.
func (s *Splitter) Split(name, src string) []Chunk {
	if !utf8.ValidString(src) {
		src = strings.ToValidUTF8(src, "\uFFFD")
	}
	switch Kind(name) {
	case KindMarkdown:
		return s.Markdown(src)
	case KindGo:
		return s.Go(src)
	case KindCode:
		return s.Code(src)
	}
	return s.Text(src)
}

// Contextual is a chunk's indexed text: a line of context, then the raw
// chunk. repo may be empty (a folder or a page).
func Contextual(repo, name string, c Chunk) string {
	var b strings.Builder
	if repo != "" {
		b.WriteString(repo)
		b.WriteString(": ")
	}
	b.WriteString(name)
	if len(c.Heading) > 0 {
		b.WriteString(" › ")
		b.WriteString(strings.Join(c.Heading, " › "))
	}
	if c.Decl != "" {
		b.WriteString(" · ")
		b.WriteString(c.Decl)
	}
	b.WriteString("\n\n")
	b.WriteString(c.Content)
	return b.String()
}

// lines splits src into lines without their line ends. A final line end
// does not start another line.
func lines(src string) []string {
	if src == "" {
		return nil
	}
	ls := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

func blank(line string) bool { return strings.TrimSpace(line) == "" }

// span is a range of lines [start, end) (0-based) with what it is about.
type span struct {
	start, end int
	heading    []string
	decl       string
	refs       []string
}

// emit turns spans into chunks within the budget: leading and trailing
// blank lines are dropped, empty spans skipped, spans over the budget cut.
func (s *Splitter) emit(ls []string, spans []span) []Chunk {
	var out []Chunk
	for _, sp := range spans {
		for sp.start < sp.end && blank(ls[sp.start]) {
			sp.start++
		}
		for sp.end > sp.start && blank(ls[sp.end-1]) {
			sp.end--
		}
		if sp.start >= sp.end {
			continue
		}
		out = append(out, s.fit(ls, sp, 0)...)
	}
	return out
}

// fit returns sp as one chunk when it is within the budget, else cut by
// lines (each piece repeating up to overlap tokens of the last one's end),
// and a line over the budget by words.
func (s *Splitter) fit(ls []string, sp span, overlap int) []Chunk {
	text := strings.Join(ls[sp.start:sp.end], "\n")
	mk := func(content string, start, end int) Chunk {
		return Chunk{Content: content, StartLine: start + 1, EndLine: end, Heading: sp.heading, Decl: sp.decl, Refs: sp.refs}
	}
	if s.counter.Count(text) <= s.maxTokens {
		return []Chunk{mk(text, sp.start, sp.end)}
	}
	var out []Chunk
	i := sp.start
	for i < sp.end {
		if s.counter.Count(ls[i]) > s.maxTokens {
			for _, piece := range s.cutLine(ls[i]) {
				out = append(out, mk(piece, i, i+1))
			}
			i++
			continue
		}
		j, used := i, 0
		for j < sp.end {
			n := s.counter.Count(ls[j]) + 1 // the line end
			if used+n > s.maxTokens && j > i {
				break
			}
			if n > s.maxTokens {
				break
			}
			used += n
			j++
		}
		out = append(out, mk(strings.Join(ls[i:j], "\n"), i, j))
		if j >= sp.end {
			break
		}
		// Overlap: start the next piece a few lines back, but always
		// after i, so that the walk moves on.
		next := j
		for back := 0; overlap > 0 && next-1 > i; {
			back += s.counter.Count(ls[next-1]) + 1
			if back > overlap {
				break
			}
			next--
		}
		i = next
	}
	return out
}

// cutLine cuts a line over the budget into pieces within it, between
// words where there are any, else between runes.
func (s *Splitter) cutLine(line string) []string {
	var out []string
	rest := []rune(line)
	for len(rest) > 0 {
		if s.counter.Count(string(rest)) <= s.maxTokens {
			out = append(out, string(rest))
			break
		}
		// The longest prefix within the budget: at least one rune, so
		// that the walk moves on.
		lo, hi := 1, len(rest)
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if s.counter.Count(string(rest[:mid])) <= s.maxTokens {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		cut := lo
		for k := lo - 1; k > lo/2; k-- {
			if rest[k] == ' ' || rest[k] == '\t' {
				cut = k + 1
				break
			}
		}
		out = append(out, string(rest[:cut]))
		rest = rest[cut:]
	}
	return out
}
