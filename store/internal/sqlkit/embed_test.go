package sqlkit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/h4r/h4r/store/internal/sqlkit"
)

// fixedEmbedder answers every call with the same vectors.
type fixedEmbedder [][]float32

func (f fixedEmbedder) Embed(context.Context, []string) ([][]float32, error) { return f, nil }
func (fixedEmbedder) Model() string                                          { return "fixed" }

func TestEmbedChecksTheAnswer(t *testing.T) {
	tests := []struct {
		name    string
		vecs    [][]float32
		wantErr string
	}{
		{"one vector per text", [][]float32{{1, 2}, {3, 4}}, ""},
		{"a vector missing", [][]float32{{1, 2}}, "returned 1 vectors for 2 texts"},
		{"dimensions differ", [][]float32{{1, 2}, {3}}, "vector 1 has 1 dimensions"},
		{"empty vectors", [][]float32{{}, {}}, "vector 0 has 0 dimensions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sqlkit.Embed(context.Background(), fixedEmbedder(tc.vecs), []string{"a", "b"})
			if tc.wantErr == "" {
				if err != nil || len(got) != 2 {
					t.Fatalf("Embed = %v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || got != nil {
				t.Fatalf("Embed = %v, %v; want an error containing %q", got, err, tc.wantErr)
			}
		})
	}
}
