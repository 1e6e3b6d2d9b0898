// Package rank is the ranking stage of H4R. The root package holds the
// name h4r and the domain model (where a newcomer looks for it), so the
// ranker lives in rank/, with a package name that needs no alias.
//
// Rank turns merged candidates into a scored, ordered list. Each candidate
// gets the eight signals of docs/concepts.md, each in [0, 1]: relevance (the text
// generators' scores normalised within the candidate set and fused),
// recency, frequency, importance, causality, novelty⁻, trust and
// sensitivity⁻. The score is their weighted sum with weights normalised to
// sum to 1. Ranking is a pure function of its input and the injected clock:
// the same candidates always come out in the same order.
package rank
