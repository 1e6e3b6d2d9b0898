package bench

import (
	"math"
	"slices"
)

// Judgments maps a document id to its graded relevance (> 0 is relevant).
// Gains are 2^g − 1, so binary judgments (g = 1) give gain 1.
type Judgments map[string]int

// NDCG returns nDCG@k of ranked against the judgments: DCG of the ranking
// divided by DCG of the ideal ranking, with gain 2^g − 1 and discount
// log2(rank+1). It is 0 when nothing is relevant.
func NDCG(ranked []string, judged Judgments, k int) float64 {
	var dcg float64
	for i, id := range ranked[:min(k, len(ranked))] {
		if g := judged[id]; g > 0 {
			dcg += gain(g) / math.Log2(float64(i+2))
		}
	}
	grades := make([]int, 0, len(judged))
	for _, g := range judged {
		if g > 0 {
			grades = append(grades, g)
		}
	}
	slices.SortFunc(grades, func(a, b int) int { return b - a })
	var ideal float64
	for i, g := range grades[:min(k, len(grades))] {
		ideal += gain(g) / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}

// MRR returns the reciprocal rank of the first relevant document within the
// top k (0 when there is none).
func MRR(ranked []string, judged Judgments, k int) float64 {
	for i, id := range ranked[:min(k, len(ranked))] {
		if judged[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// Recall returns the share of relevant documents found within the top k (0
// when nothing is relevant).
func Recall(ranked []string, judged Judgments, k int) float64 {
	relevant := 0
	for _, g := range judged {
		if g > 0 {
			relevant++
		}
	}
	if relevant == 0 {
		return 0
	}
	found := 0
	for _, id := range ranked[:min(k, len(ranked))] {
		if judged[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(relevant)
}

func gain(grade int) float64 { return math.Pow(2, float64(grade)) - 1 }
