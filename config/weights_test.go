package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
)

func TestApplyWeightsFile(t *testing.T) {
	tests := []struct {
		name       string
		file       string
		wantErr    string
		wantWeight h4r.Weights
		wantLambda float64
	}{
		{"tuned file", `{"weights": {"relevance": 0.6, "recency": 0.1, "frequency": 0, "importance": 0.1, "causality": 0.2, "novelty": 0, "trust": 0, "sensitivity": 0}, "recencyDecayLambda": 0.05, "source": "h4r bench tune", "heldOut": {"ndcg@10": 0.4}}`,
			"", h4r.Weights{0.6, 0.1, 0, 0.1, 0.2, 0, 0, 0}, 0.05},
		{"unknown field", `{"weights": {"relevance": 1}, "recencyDecayLambda": 0.1, "extra": 1}`, "extra", h4r.Weights{}, 0},
		{"unknown signal", `{"weights": {"luck": 1}, "recencyDecayLambda": 0.1}`, `weights.luck: unknown signal "luck"`, h4r.Weights{}, 0},
		{"signal in another case", `{"weights": {"Recency": 1}, "recencyDecayLambda": 0.1}`, `weights.Recency: unknown signal "Recency" (did you mean "recency"?)`, h4r.Weights{}, 0},
		{"weight not a number", `{"weights": {"recency": "high"}, "recencyDecayLambda": 0.1}`, `weights.recency: want a number`, h4r.Weights{}, 0},
		{"weight null", `{"weights": {"recency": null}, "recencyDecayLambda": 0.1}`, `weights.recency: want a number`, h4r.Weights{}, 0},
		{"weight twice", `{"weights": {"recency": 1, "recency": 0}, "recencyDecayLambda": 0.1}`, `weights.recency: duplicate key`, h4r.Weights{}, 0},
		{"negative weight", `{"weights": {"relevance": -1, "trust": 2}, "recencyDecayLambda": 0.1}`, "weights.relevance", h4r.Weights{}, 0},
		{"all zero", `{"weights": {"relevance": 0}, "recencyDecayLambda": 0.1}`, "at least one weight", h4r.Weights{}, 0},
		{"negative lambda", `{"weights": {"relevance": 1}, "recencyDecayLambda": -0.1}`, "recencyDecayLambda", h4r.Weights{}, 0},
		{"not JSON", `weights: 1`, "malformed JSON", h4r.Weights{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "weights.json")
			if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			c := config.Default()
			c.WeightsFile = path
			err := c.ApplyWeightsFile()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "H4R_WEIGHTS_FILE") {
					t.Fatalf("error = %v, want one naming H4R_WEIGHTS_FILE and %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Weights != tt.wantWeight || c.RecencyDecayLambda != tt.wantLambda {
				t.Errorf("weights %v lambda %v, want %v %v", c.Weights, c.RecencyDecayLambda, tt.wantWeight, tt.wantLambda)
			}
		})
	}
	c := config.Default()
	if err := c.ApplyWeightsFile(); err != nil || c != config.Default() {
		t.Errorf("without H4R_WEIGHTS_FILE: %v, config changed %v", err, c != config.Default())
	}
}
