package ingest

import (
	"os"
	"testing"
)

// FuzzPDFText: a PDF from outside never crashes ingestion; it gives text
// or an error.
func FuzzPDFText(f *testing.F) {
	b, err := os.ReadFile("testdata/corrupted.pdf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("%PDF-1.7\n%%EOF\n"))
	f.Add([]byte("%PDF-1.4\ntrailer << /Root 1 0 R /Size 2 >>\nstartxref\n9\n%%EOF\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		text, err := pdfText(b)
		if err == nil && len(text) == 0 {
			t.Error("no error and no text")
		}
	})
}
