package ingest

import (
	"path"
	"slices"
	"strings"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/chunk"
)

// maxRefLinks bounds the references links of one chunk.
const maxRefLinks = 16

// items builds a file's document item and chunk items.
func (w *writer) items(p, sha, text string, chunks []chunk.Chunk, cred bool) []h4r.Item {
	docID := w.docID(p)
	nLines := strings.Count(text, "\n") + 1
	base := func() h4r.Metadata {
		m := h4r.Metadata{Source: "ingest:" + w.typ, HasCredentials: cred, Extra: map[string]any{
			"sha": sha, "source_type": w.typ, "source_key": w.key,
		}}
		if w.typ == TypeURL {
			m.Extra["url"] = p
		} else {
			m.Extra["path"] = p
		}
		if w.l.repo != "" {
			m.Extra["repo"] = w.l.repo
		}
		if w.l.commit != "" {
			m.Extra["commit"] = w.l.commit
		}
		if d := w.src.Metadata; d != nil {
			m.Sensitivity, m.Trust = d.Sensitivity, d.Trust
			m.RestrictedToGroups = slices.Clone(d.RestrictedToGroups)
		}
		return m
	}
	name := p
	if w.l.repo != "" && w.typ != TypeURL {
		name = w.l.repo + ": " + p
	}
	var outline []string
	for _, c := range chunks {
		switch {
		case len(c.Heading) > 0:
			outline = append(outline, strings.Join(c.Heading, " › "))
		case c.Decl != "":
			outline = append(outline, c.Decl)
		}
	}
	outline = slices.Compact(outline)
	docText := name + "\n\n" + strings.Join(outline, "\n")
	if len(docText) > 4096 {
		docText = strings.ToValidUTF8(docText[:4096], "")
	}
	dm := base()
	dm.Extra["line_range"] = []any{1, nLines}
	dm.Extra["chunks"] = len(chunks)
	doc := h4r.Item{ID: docID, Kind: KindDocument, Text: docText, Metadata: dm,
		Content: map[string]any{"path": p, "sha": sha, "chunks": len(chunks), "lines": nLines}}
	items := []h4r.Item{doc}
	for i, c := range chunks {
		id := w.chunkID(p, i)
		if len(items[0].Links) < h4r.MaxLinks {
			items[0].Links = append(items[0].Links, h4r.Link{Type: LinkContains, Target: id})
		}
		m := base()
		m.Extra["line_range"] = []any{c.StartLine, c.EndLine}
		m.Extra["document"] = docID
		m.Extra["chunk_index"] = i
		content := map[string]any{"text": c.Content, "path": p, "line_range": []any{c.StartLine, c.EndLine}}
		if len(c.Heading) > 0 {
			content["heading"] = strings.Join(c.Heading, " › ")
		}
		if c.Decl != "" {
			content["declaration"] = c.Decl
		}
		it := h4r.Item{ID: id, Kind: KindChunk, Text: c.Content, Content: content, Metadata: m}
		if w.in.contextual {
			repo := w.l.repo
			if w.typ == TypeURL {
				repo = ""
			}
			it.Text = chunk.Contextual(repo, p, c)
		}
		if i > 0 {
			it.Links = append(it.Links, h4r.Link{Type: LinkFollows, Target: w.chunkID(p, i-1)})
		}
		for _, target := range w.resolve(p, c.Refs) {
			if len(it.Links) > maxRefLinks {
				break
			}
			it.Links = append(it.Links, h4r.Link{Type: LinkReferences, Target: w.docID(target), Strength: 0.5})
		}
		items = append(items, it)
	}
	return items
}

// resolve maps a chunk's references to paths of this source: relative
// Markdown links against the file's folder, Go imports of this module to
// the non-test Go files of the imported package's folder.
func (w *writer) resolve(from string, refs []string) []string {
	w.layoutOnce()
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != from && w.paths[p] && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, r := range refs {
		if w.module != "" && (r == w.module || strings.HasPrefix(r, w.module+"/")) {
			dir := strings.TrimPrefix(strings.TrimPrefix(r, w.module), "/")
			for _, p := range w.goDirs[orDot(dir)] {
				add(p)
			}
			continue
		}
		if strings.Contains(r, "://") || strings.HasPrefix(r, "/") {
			continue
		}
		add(path.Clean(path.Join(path.Dir(from), r)))
	}
	slices.Sort(out)
	return out
}

func orDot(d string) string {
	if d == "" {
		return "."
	}
	return d
}

// layoutOnce builds what resolve needs (the source's paths, its Go
// folders, its module path) the first time a file is chunked: an
// unchanged re-ingest never pays for it.
func (w *writer) layoutOnce() {
	if w.paths != nil {
		return
	}
	w.paths = make(map[string]bool, len(w.l.files))
	w.goDirs = map[string][]string{}
	for _, f := range w.l.files {
		w.paths[f.path] = true
		if strings.HasSuffix(f.path, ".go") && !strings.HasSuffix(f.path, "_test.go") {
			w.goDirs[path.Dir(f.path)] = append(w.goDirs[path.Dir(f.path)], f.path)
		}
	}
	w.module = goModule(w.l)
}

// goModule reads the module path from the source's go.mod, if any.
func goModule(l listing) string {
	for _, f := range l.files {
		if f.path != "go.mod" || f.size > 1<<20 {
			continue
		}
		b, err := f.read()
		if err != nil {
			return ""
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
				return strings.Trim(strings.TrimSpace(rest), `"`)
			}
		}
	}
	return ""
}
