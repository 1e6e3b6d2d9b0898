package tokens_test

import (
	"testing"

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
