package ingest_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/ingest"
)

var updatePDF = flag.Bool("update", false, "rewrite testdata/text-layer.pdf from textLayerLines")

// textLayerLines are the lines of testdata/text-layer.pdf's one page, ""
// for a blank line (a paragraph break): three paragraphs, long enough
// together for the 120-token chunks of newEnv to need more than one.
var textLayerLines = []string{
	"Budgets in H4R",
	"",
	"The policy slicer enforces three budgets on every context pack.",
	"The byte budget caps the size of the serialized evidence, the token",
	"budget counts tokens with tiktoken in the encoding the packs use, and",
	"the item budget caps how many items a pack may carry at most.",
	"",
	"Items are taken in rank order. An item that would overflow any budget",
	"is left out, and the pack says which budget stopped it, so an agent",
	"can ask again with a larger budget or a narrower question instead.",
	"",
	"Redaction happens before the budgets are counted: a redacted item",
	"costs what its redacted copy costs, never what the original did.",
	"Policy decides allow or redact per item and fails closed on error.",
}

// textLayerPDF writes a minimal PDF 1.4 by hand: one page, Helvetica
// (WinAnsiEncoding), one text object showing each line with Tj and moving
// to the next with T*, and a cross-reference table with exact offsets.
func textLayerPDF() []byte {
	var content strings.Builder
	content.WriteString("BT\n/F1 11 Tf\n14 TL\n72 760 Td\n")
	for i, l := range textLayerLines {
		if i > 0 {
			content.WriteString("T*\n")
		}
		if l != "" {
			fmt.Fprintf(&content, "(%s) Tj\n", strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`).Replace(l))
		}
	}
	content.WriteString("ET\n")
	objects := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", content.Len(), content.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

// TestTextLayerPDFFixture: testdata/text-layer.pdf is what textLayerPDF
// writes (go test ./ingest -run TestTextLayerPDFFixture -update rewrites it).
func TestTextLayerPDFFixture(t *testing.T) {
	want := textLayerPDF()
	if *updatePDF {
		if err := os.WriteFile("testdata/text-layer.pdf", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("testdata/text-layer.pdf")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("testdata/text-layer.pdf is not textLayerPDF's output (%v): run with -update", err)
	}
}

// TestIngestTextLayerPDF: a PDF with a real text layer is extracted and
// chunked by paragraph, and each chunk's citation line range points at the
// lines of the extracted text that hold exactly its content; the whole
// text is covered, first line to last.
func TestIngestTextLayerPDF(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	pdf, err := os.ReadFile("testdata/text-layer.pdf")
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "budgets.pdf", string(pdf))
	in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root))
	p := run(t, in, ingest.Source{Type: ingest.TypeDoc, Path: filepath.Join(root, "budgets.pdf")}, ingest.Options{})
	if p.FilesChanged != 1 || len(p.Errors) != 0 || p.ChunksWritten < 2 {
		t.Fatalf("text-layer PDF: %+v", p)
	}
	var doc *h4r.Item
	var chunks []*h4r.Item
	_ = e.store.Each(context.Background(), func(it *h4r.Item) error {
		switch it.Kind {
		case ingest.KindDocument:
			doc = it
		case ingest.KindChunk:
			chunks = append(chunks, it)
		}
		return nil
	})
	if doc == nil || len(chunks) != p.ChunksWritten {
		t.Fatalf("document %v, %d chunks; progress %+v", doc, len(chunks), p)
	}
	// The extracted text: the library starts a text object with a line
	// break, then one line a Tj, a break a T*.
	text := "\n" + strings.Join(textLayerLines, "\n")
	lines := strings.Split(text, "\n")
	slices.SortFunc(chunks, func(a, b *h4r.Item) int { return lineRange(t, a)[0] - lineRange(t, b)[0] })
	covered := map[int]bool{}
	for _, c := range chunks {
		lr := lineRange(t, c)
		t.Logf("chunk %s lines %v", c.ID, lr)
		if c.Metadata.Extra["path"] != "budgets.pdf" || c.Metadata.Extra["source_type"] != ingest.TypeDoc {
			t.Errorf("chunk %s metadata = %v", c.ID, c.Metadata.Extra)
		}
		if lr[0] < 1 || lr[1] > len(lines) || lr[0] > lr[1] {
			t.Fatalf("chunk %s line range %v outside the text's %d lines", c.ID, lr, len(lines))
		}
		raw, _ := c.Content["text"].(string)
		want := strings.Join(lines[lr[0]-1:lr[1]], "\n")
		if strings.TrimSpace(raw) != strings.TrimSpace(want) {
			t.Errorf("chunk %s cites lines %v:\n%q\nbut holds\n%q", c.ID, lr, want, raw)
		}
		for l := lr[0]; l <= lr[1]; l++ {
			covered[l] = true
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) != "" && !covered[i+1] {
			t.Errorf("line %d %q is in no chunk", i+1, l)
		}
	}
	// The paragraph about redaction is cited where it is.
	var found bool
	for _, c := range chunks {
		if raw, _ := c.Content["text"].(string); strings.Contains(raw, "Redaction happens before") {
			found = true
			if lr := lineRange(t, c); lr[0] > 13 || lr[1] < 15 {
				t.Errorf("the redaction paragraph (lines 13-15) is cited as %v", lr)
			}
		}
	}
	if !found {
		t.Error("no chunk holds the redaction paragraph")
	}
}

func lineRange(t *testing.T, it *h4r.Item) [2]int {
	t.Helper()
	var out [2]int
	switch v := it.Metadata.Extra["line_range"].(type) {
	case []any:
		if len(v) == 2 {
			for i := range 2 {
				switch n := v[i].(type) {
				case int:
					out[i] = n
				case float64:
					out[i] = int(n)
				}
			}
			return out
		}
	}
	t.Fatalf("item %s line_range = %#v", it.ID, it.Metadata.Extra["line_range"])
	return out
}
