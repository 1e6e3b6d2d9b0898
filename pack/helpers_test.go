package pack

import (
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/rank"
	"github.com/h4r/h4r/tokens"
)

// fixedNow is the clock of these tests.
var fixedNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return fixedNow }

// verdict is the slicer's decision on one item in these tests; an item
// without one is kept as is.
type verdict struct {
	reason, detail string
	redact         []string // top-level "$.content.key" paths replaced by the marker
}

// loadItems reads testdata/items.json.
func loadItems(t testing.TB) map[string]*h4r.Item {
	t.Helper()
	data, err := os.ReadFile("testdata/items.json")
	if err != nil {
		t.Fatal(err)
	}
	var items []*h4r.Item
	if err := json.Unmarshal(data, &items); err != nil {
		t.Fatalf("decoding testdata/items.json: %v", err)
	}
	byID := map[string]*h4r.Item{}
	for i, it := range items {
		if err := it.Validate("items[" + it.ID + "]"); err != nil {
			t.Fatalf("items[%d]: %v", i, err)
		}
		byID[it.ID] = it
	}
	return byID
}

// entries turns ranked candidates into entries as the slicer would: kept
// items get their delivered (redacted) form, measured in bytes and exact
// tokens.
func entries(t testing.TB, ranked []rank.Ranked, verdicts map[string]verdict, counter *tokens.Counter) []Entry {
	t.Helper()
	out := make([]Entry, len(ranked))
	for i, r := range ranked {
		v, ok := verdicts[r.Candidate.Item.ID]
		if !ok {
			v.reason = h4r.ReasonKept
		}
		e := Entry{Ranked: &ranked[i], Reason: v.reason, Detail: v.detail}
		if v.reason == h4r.ReasonKept {
			d := r.Candidate.Item.Delivered()
			if len(v.redact) > 0 {
				d.Content = maps.Clone(d.Content)
				for _, path := range v.redact {
					d.Content[strings.TrimPrefix(path, "$.content.")] = h4r.RedactionMarker
				}
				e.Redacted, e.RedactedFields = true, v.redact
			}
			b, err := d.Encode()
			if err != nil {
				t.Fatal(err)
			}
			e.Delivered, e.Bytes, e.Tokens = &d, len(b), counter.Count(string(b))
		}
		out[i] = e
	}
	return out
}

func newCounter(t testing.TB) *tokens.Counter {
	t.Helper()
	c, err := tokens.New(tokens.CL100K)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fixtureWeights give every signal a share, relevance the largest.
var fixtureWeights = h4r.Weights{0.4, 0.15, 0.05, 0.1, 0.1, 0.05, 0.1, 0.05}

// fixtureInput is the pack input of the golden test: the items of
// testdata/items.json found by full-text, vector and hops, ranked by the
// real ranker, one denied by policy (credentials), one over the token
// budget and one redacted.
func fixtureInput(t testing.TB) Input {
	t.Helper()
	items := loadItems(t)
	ev := map[string][]h4r.Evidence{
		"mem-001": {{Generator: h4r.GenFullText, Score: 9.5, Rank: 2}, {Generator: h4r.GenVector, Score: 0.82, Rank: 1}, {Generator: h4r.GenGraph, Distance: 0}},
		"mem-002": {{Generator: h4r.GenFullText, Score: 4, Rank: 4}, {Generator: h4r.GenVector, Score: 0.55, Rank: 3}},
		"mem-003": {{Generator: h4r.GenFullText, Score: 6, Rank: 3}, {Generator: h4r.GenVector, Score: 0.4, Rank: 4}, {Generator: h4r.GenGraph, Distance: 1}},
		"mem-004": {{Generator: h4r.GenFullText, Score: 12, Rank: 1}, {Generator: h4r.GenVector, Score: 0.8, Rank: 2}},
		"mem-005": {{Generator: h4r.GenFullText, Score: 1.5, Rank: 5}},
		"mem-006": {{Generator: h4r.GenGraph, Distance: 2}},
	}
	var cands []*h4r.Candidate
	for _, id := range []string{"mem-001", "mem-002", "mem-003", "mem-004", "mem-005", "mem-006"} {
		cands = append(cands, &h4r.Candidate{Item: items[id], Evidence: ev[id]})
	}
	ranked, warnings := rank.Rank(cands, rank.Options{Weights: fixtureWeights, Lambda: rank.DefaultLambda, Now: fixedNow})
	if len(warnings) != 0 {
		t.Fatalf("ranking the fixture warned: %q", warnings)
	}
	es := entries(t, ranked, map[string]verdict{
		"mem-003": {reason: h4r.ReasonKept, redact: []string{"$.content.personalData"}},
		"mem-004": {reason: h4r.ReasonPolicy, detail: "credentials"},
		"mem-005": {reason: h4r.ReasonBudgetTokens, detail: "needs 25 tokens, 10 left"},
	}, newCounter(t))
	used := h4r.BudgetUsage{}
	for _, e := range es {
		if e.Reason == h4r.ReasonKept {
			used.Bytes += e.Bytes
			used.EstimatedTokens += e.Tokens
			used.Items++
		}
	}
	return Input{
		RequestID:  "msg-123",
		Query:      "login test failures with selector issues",
		Specialist: h4r.Specialist{Type: "specialist", ID: "playwright_healer", SecurityLevel: h4r.Internal, AuthorizedGroups: []string{"qa"}},
		Entries:    es,
		Slicing: h4r.SlicingStats{
			TotalCandidates: len(es), TotalKept: used.Items, TotalRedacted: 1,
			TotalDroppedBudget: 1, TotalDroppedPolicy: 1, BudgetUsed: used,
			BudgetLimit: h4r.BudgetUsage{Bytes: 122880, EstimatedTokens: 30000, Items: 10},
		},
		Sources: map[string]h4r.SourceStats{
			h4r.GenFullText: {Candidates: 5, Ms: 1.2},
			h4r.GenVector:   {Candidates: 4, Ms: 2.5},
			h4r.GenGraph:    {Candidates: 3, Ms: 0.7},
		},
		Timings:       h4r.Timings{CandidateMs: 12.5, RankingMs: 0.8, SlicingMs: 3.2},
		Start:         fixedNow.Add(-42 * time.Millisecond),
		Weights:       fixtureWeights,
		Warnings:      []string{"no vector generator is configured: example warning"},
		Status:        h4r.StatusOK,
		IncludeScores: true,
	}
}

// entry is a hand-made entry: relevance is its relevance signal and score.
// Kept entries are delivered unredacted.
func entry(id, kind, text, reason string, relevance float64) Entry {
	it := &h4r.Item{ID: id, Kind: kind, Text: text, Metadata: h4r.Metadata{CreatedAt: fixedNow}}
	var s h4r.Signals
	s[h4r.Relevance] = relevance
	e := Entry{
		Ranked: &rank.Ranked{Candidate: &h4r.Candidate{Item: it}, Signals: s, Score: relevance,
			Explanation: "Score of " + id},
		Reason: reason,
	}
	if reason == h4r.ReasonKept {
		d := it.Delivered()
		e.Delivered = &d
	}
	return e
}

func kept(id, text string) Entry    { return entry(id, "note", text, h4r.ReasonKept, 0.9) }
func dropped(id, text string) Entry { return entry(id, "note", text, h4r.ReasonPolicy, 1) }

func intPtr(n int) *int    { return &n }
func boolPtr(b bool) *bool { return &b }
