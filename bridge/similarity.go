package bridge

import (
	"math"
	"slices"

	"github.com/h4r/h4r/embed"
)

// Weights of the bridge contract's concept-only similarity.
const (
	conceptWeight    = 0.5
	domainWeight     = 0.2
	toolWeight       = 0.2
	complexityWeight = 0.1
	// Hybrid similarity: embedding cosine and concept Jaccard.
	hybridEmbeddingWeight = 0.7
	hybridConceptWeight   = 0.3
)

// ConceptSimilarity is the bridge contract's weighted score of two
// signatures, with the concept overlap deciding how much the rest counts:
// the concept term, sqrt of the Dice coefficient of the concepts
// (2J/(1+J) of their Jaccard J), multiplies the weighted sum of concept
// weight, tool overlap, complexity and domain. Added instead, tools and
// complexity alone gave two texts sharing no concept 0.375, against the
// contract's 0-0.2 for different domains; and the plain Jaccard put
// rephrasings (one concept in two shared) under its ranges for related
// problems. docs/bridge.md has the table. When either signature has no
// domain the domain term is unknown, not a mismatch: it is left out and
// the other weights are rescaled to sum to 1.
func ConceptSimilarity(a, b *Signature) float64 {
	return weighted(jaccard(a.KeyConcepts, b.KeyConcepts), overlapRatio(a.ToolSequence, b.ToolSequence), a, b)
}

// weighted combines the concept Jaccard and the tool overlap of a and b
// with their domains and complexities (the index computes the first two
// from its postings, without ConceptSimilarity's sets).
func weighted(concepts, tools float64, a, b *Signature) float64 {
	return weightedBy(concepts, tools, a.Complexity, b.Complexity, a.Domain == "" || b.Domain == "", a.Domain == b.Domain)
}

// weightedBy is weighted given the complexities and whether a domain is
// missing or both are the same. It grows with concepts and tools and is
// highest at equal complexities, which the index's bounds rely on
// (mayReachIn, unrelatedMax).
func weightedBy(concepts, tools, complexityA, complexityB float64, noDomain, sameDomain bool) float64 {
	rest := conceptWeight + tools*toolWeight + (1-math.Abs(complexityA-complexityB))*complexityWeight
	switch {
	case noDomain:
		rest /= 1 - domainWeight
	case sameDomain:
		rest += domainWeight
	}
	return conceptCurve(concepts) * rest
}

// conceptCurve is sqrt(Dice) of a Jaccard coefficient j: 0 and 1 kept, one
// concept shared in four (j = 1/4) 0.63, one in two 0.82.
func conceptCurve(j float64) float64 {
	if j <= 0 {
		return 0
	}
	return math.Sqrt(2 * j / (1 + j))
}

// HybridSimilarity is the bridge contract's semantic mode: 0.7 cosine of the
// embeddings, 0.3 concept Jaccard.
func HybridSimilarity(a, b *Signature) float64 {
	return hybridEmbeddingWeight*max(embed.Cosine(a.Embedding, b.Embedding), 0) + hybridConceptWeight*jaccard(a.KeyConcepts, b.KeyConcepts)
}

// jaccard is |a ∩ b| / |a ∪ b| of the distinct strings of a and b, 1 when
// both are empty. Signatures hold a few concepts, so the sets are counted
// by scanning the slices rather than by building maps, which cost a miss
// more than the rest of its scoring (TestSetMeasuresEqualMaps).
func jaccard(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	if len(a)+len(b) > smallSets {
		return jaccardOfMaps(a, b)
	}
	inter, union := 0, 0
	for i, x := range a {
		if !slices.Contains(a[:i], x) {
			union++
		}
	}
	for j, x := range b {
		if slices.Contains(b[:j], x) {
			continue
		}
		if slices.Contains(a, x) {
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

// smallSets is the most strings jaccard compares by scanning; scanning is
// quadratic, maps win beyond a few dozen.
const smallSets = 48

// jaccardOfMaps is jaccard for long texts.
func jaccardOfMaps(a, b []string) float64 {
	set := make(map[string]bool, len(a))
	for _, x := range a {
		set[x] = true
	}
	inter, union := 0, len(set)
	seen := make(map[string]bool, len(b))
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

// overlapRatio is how many of b's entries (repeats counted) are in a,
// over the longer length.
func overlapRatio(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	n := 0
	if len(a) > smallSets {
		set := make(map[string]bool, len(a))
		for _, x := range a {
			set[x] = true
		}
		for _, x := range b {
			if set[x] {
				n++
			}
		}
	} else {
		for _, x := range b {
			if slices.Contains(a, x) {
				n++
			}
		}
	}
	return float64(n) / float64(max(len(a), len(b)))
}
