package config

import (
	"fmt"
	"math"
	"os"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// WeightsFile is the file h4r bench tune writes and H4R_WEIGHTS_FILE
// loads: the eight weights and the recency decay, with where they came from
// so that a deployment can say why it ranks as it does.
type WeightsFile struct {
	Weights            h4r.Weights `json:"weights"`
	RecencyDecayLambda float64     `json:"recencyDecayLambda"`
	// Provenance, written by the tuner and shown by nothing but people.
	Source  string             `json:"source,omitempty"`  // the command and datasets that produced it
	HeldOut map[string]float64 `json:"heldOut,omitempty"` // held-out metrics, e.g. {"ndcg@10": 0.41}
}

// ReadWeightsFile reads and checks a weights file. Errors name the file and
// the field.
func ReadWeightsFile(path string) (WeightsFile, error) {
	var wf WeightsFile
	raw, err := os.ReadFile(path)
	if err != nil {
		return wf, fmt.Errorf("H4R_WEIGHTS_FILE: %w", err)
	}
	if err := jsonstrict.Decode(raw, &wf, ""); err != nil {
		return wf, fmt.Errorf("H4R_WEIGHTS_FILE %s: %w", path, err)
	}
	if err := wf.Weights.Validate("weights"); err != nil {
		return wf, fmt.Errorf("H4R_WEIGHTS_FILE %s: %w", path, err)
	}
	if l := wf.RecencyDecayLambda; math.IsNaN(l) || math.IsInf(l, 0) || l < 0 {
		return wf, fmt.Errorf("H4R_WEIGHTS_FILE %s: %w", path, h4r.Errorf(h4r.EINVALID, "recencyDecayLambda", "want a number >= 0, got %v", l))
	}
	return wf, nil
}

// ApplyWeightsFile replaces c's weights and lambda with those of
// c.WeightsFile, when it is set.
func (c *Config) ApplyWeightsFile() error {
	if c.WeightsFile == "" {
		return nil
	}
	wf, err := ReadWeightsFile(c.WeightsFile)
	if err != nil {
		return err
	}
	c.Weights, c.RecencyDecayLambda = wf.Weights, wf.RecencyDecayLambda
	return nil
}
