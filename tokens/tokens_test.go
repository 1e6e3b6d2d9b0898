package tokens_test

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/h4r/h4r/internal/datasets"
	"github.com/h4r/h4r/tokens"
)

// Expected counts are those of OpenAI's tiktoken for the same strings.
func TestCount(t *testing.T) {
	tests := []struct {
		name     string
		encoding string
		text     string
		want     int
	}{
		{"empty", tokens.CL100K, "", 0},
		{"hello world cl100k", tokens.CL100K, "hello world", 2},
		{"hello world o200k", tokens.O200K, "hello world", 2},
		{"special marker is ordinary text", tokens.CL100K, "<|endoftext|>", 7},
		{"tiktoken readme example", tokens.CL100K, "tiktoken is great!", 6},
		{"json", tokens.CL100K, `{"id":"mem-001"}`, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tokens.New(tt.encoding)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Count(tt.text); got != tt.want {
				t.Errorf("Count(%q) = %d, want %d", tt.text, got, tt.want)
			}
		})
	}
}

func TestUnknownEncoding(t *testing.T) {
	if _, err := tokens.New("p50k_base"); err == nil {
		t.Fatal("New(p50k_base) succeeded, want an error naming the supported encodings")
	}
}

func BenchmarkCount(b *testing.B) {
	c, err := tokens.New(tokens.CL100K)
	if err != nil {
		b.Fatal(err)
	}
	text := `{"id":"mem-001","kind":"test_failure","text":"login-spec-001 failed: element #login-button not found","content":{"test":"login-spec-001","selector":"#login-button"}}`
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		c.Count(text)
	}
}

// BenchmarkCountCorpus counts the lines of the scifact corpus (JSON, as
// items are delivered), one line per op, going round the corpus so that
// what the counter remembers is as warm as in an ingest of it.
func BenchmarkCountCorpus(b *testing.B) {
	f, err := os.Open(filepath.Join(datasets.Dir(b, "scifact"), "corpus.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	c, err := tokens.New(tokens.CL100K)
	if err != nil {
		b.Fatal(err)
	}
	bytes, i := 0, 0
	for b.Loop() {
		line := lines[i%len(lines)]
		c.Count(line)
		bytes += len(line)
		i++
	}
	b.ReportMetric(float64(bytes)/b.Elapsed().Seconds()/1e6, "MB/s")
}
