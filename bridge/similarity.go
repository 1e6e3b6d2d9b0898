package bridge

import (
	"math"

	"github.com/h4r/h4r/embed"
)

// Weights of document 001's concept-only similarity.
const (
	conceptWeight    = 0.5
	domainWeight     = 0.2
	toolWeight       = 0.2
	complexityWeight = 0.1
	// Hybrid similarity: embedding cosine and concept Jaccard.
	hybridEmbeddingWeight = 0.7
	hybridConceptWeight   = 0.3
)

// ConceptSimilarity is document 001's weighted score of two signatures.
// When either has no domain the domain term is unknown, not a mismatch:
// it is left out and the other weights are rescaled to sum to 1.
func ConceptSimilarity(a, b *Signature) float64 {
	return weighted(jaccard(a.KeyConcepts, b.KeyConcepts), overlapRatio(a.ToolSequence, b.ToolSequence), a, b)
}

// weighted combines the concept Jaccard and the tool overlap of a and b
// with their domains and complexities (the index computes the first two
// from its postings, without ConceptSimilarity's sets).
func weighted(concepts, tools float64, a, b *Signature) float64 {
	score := concepts*conceptWeight + tools*toolWeight + (1-math.Abs(a.Complexity-b.Complexity))*complexityWeight
	if a.Domain == "" || b.Domain == "" {
		return score / (1 - domainWeight)
	}
	if a.Domain == b.Domain {
		score += domainWeight
	}
	return score
}

// HybridSimilarity is document 001's semantic mode: 0.7 cosine of the
// embeddings, 0.3 concept Jaccard.
func HybridSimilarity(a, b *Signature) float64 {
	return hybridEmbeddingWeight*max(embed.Cosine(a.Embedding, b.Embedding), 0) + hybridConceptWeight*jaccard(a.KeyConcepts, b.KeyConcepts)
}

func jaccard(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	set := make(map[string]bool, len(a))
	for _, x := range a {
		set[x] = true
	}
	inter, union := 0, len(set)
	seen := map[string]bool{}
	for _, x := range b {
		if seen[x] {
			continue
		}
		seen[x] = true
		if set[x] {
			inter++
		} else {
			union++
		}
	}
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

func overlapRatio(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	set := make(map[string]bool, len(a))
	for _, x := range a {
		set[x] = true
	}
	n := 0
	for _, x := range b {
		if set[x] {
			n++
		}
	}
	return float64(n) / float64(max(len(a), len(b)))
}
