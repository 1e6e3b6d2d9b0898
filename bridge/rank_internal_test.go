package bridge

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

// vocabulary is small so that random problems share concepts and tie on
// score; "the of and" has no concept at all.
var vocabulary = strings.Fields("database query cache latency deploy rollout login token leak panic the of and")

// randomText is a problem of up to five words, sometimes without any
// concept (stop words only), sometimes a repeat of an earlier one.
func randomText(r *rand.Rand, earlier []string) string {
	if len(earlier) > 0 && r.IntN(8) == 0 {
		text := earlier[r.IntN(len(earlier))] // the same fingerprint
		if r.IntN(2) == 0 {
			text = strings.ToUpper(text[:1]) + text[1:] // the same fingerprint, other words as written
		}
		return text
	}
	if r.IntN(10) == 0 {
		return "the of and"
	}
	ws := make([]string, 1+r.IntN(5))
	for i := range ws {
		ws[i] = vocabulary[r.IntN(len(vocabulary))]
	}
	return strings.Join(ws, " ")
}

// randomTools is a tool sequence of up to three of 80 tool names (past the
// 64 the index keeps as bits), repeats allowed, or none.
func randomTools(r *rand.Rand) []string {
	tools := make([]string, r.IntN(4))
	for i := range tools {
		if r.IntN(2) == 0 {
			tools[i] = "think"
		} else {
			tools[i] = fmt.Sprintf("tool-%d", r.IntN(80))
		}
	}
	return tools
}

// fullRank is what the pruned lookup replaces, written plainly: every
// live trajectory scored by ConceptSimilarity (1 for the same text), those
// at or above floor, best first, ties by id.
func fullRank(x *Index, call *Signature, floor float64) []scored {
	var out []scored
	for _, e := range x.slots {
		if e == nil {
			continue
		}
		sim := ConceptSimilarity(call, e.sig)
		if e.sig.Fingerprint == call.Fingerprint {
			sim = 1
		}
		if sim >= floor {
			out = append(out, scored{e: e, score: sim})
		}
	}
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.e.item.ID, b.e.item.ID)
	})
	return out
}

// TestPrunedRankEqualsFullRank: above unrelatedMax a lookup visits only
// the postings of the call's concepts (plus the same text, and for a call
// without concepts the trajectories without any), scores from the dense
// numbers, and takes the best in chunks with a heap; the chunks, joined,
// are exactly every trajectory scored by ConceptSimilarity at or above
// the floor, in the same order with the same scores: random trajectories
// with many ties, texts without concepts, repeated texts, domains missing
// or unknown, tools past 64 and repeated, and removed entries (some of
// the index compacted). With TechExtractor, and with an extractor that
// keeps the case of words, so that the same text (fingerprint, which is
// lower-cased) may have other concepts.
func TestPrunedRankEqualsFullRank(t *testing.T) {
	for _, ex := range []ConceptExtractor{TechExtractor{}, caseKeeping{}} {
		t.Run(fmt.Sprintf("%T", ex), func(t *testing.T) { prunedEqualsFull(t, ex) })
	}
}

// caseKeeping is an extractor whose concepts are the distinct words as
// written.
type caseKeeping struct{}

func (caseKeeping) Extract(text string) []string {
	var out []string
	for _, w := range strings.Fields(text) {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func prunedEqualsFull(t *testing.T, ex ConceptExtractor) {
	r := rand.New(rand.NewPCG(11, 12))
	x := NewIndex(ex)
	var texts []string
	domains := []string{"", "engineering", "ops"}
	for i := range 3000 {
		text := randomText(r, texts)
		texts = append(texts, text)
		it := Trajectory{ID: fmt.Sprintf("t%04d", r.IntN(100_000)), Description: text, Domain: domains[r.IntN(3)], ToolSequence: randomTools(r)}.Item()
		x.Put(&it) // a repeated id replaces the earlier one
		if i%5 == 0 {
			x.Remove(fmt.Sprintf("t%04d", r.IntN(100_000)))
		}
	}
	live := slices.Sorted(maps.Keys(x.byID))
	for _, id := range live[:len(live)*7/10] { // past 1024 removed and half the slots: compacted
		x.Remove(id)
	}
	for range 500 { // and written after
		text := randomText(r, texts)
		it := Trajectory{ID: fmt.Sprintf("t%04d", r.IntN(100_000)), Description: text, Domain: domains[r.IntN(3)], ToolSequence: randomTools(r)}.Item()
		x.Put(&it)
	}
	calls := 0
	for n := range 300 {
		text := randomText(r, texts)
		domain := []string{"", "engineering", "ops", "unknown"}[n%4]
		tools := []string{"think"}
		if n%3 == 0 {
			tools = randomTools(r)
		}
		call := signatureOf(text, domain, tools, x.extractor)
		for _, floor := range []float64{unrelatedMax + 1e-9, 0.6, 0.7, 0.85, 1} {
			want := fullRank(x, call, floor)
			related, rest, release, _ := x.rank(call, floor)
			var got []scored
			for len(related) > 0 {
				got = append(got, takeBest(&related, 1+r.IntN(60))...)
			}
			got = append(got, rest()...) // nothing above unrelatedMax
			same := len(got) == len(want)
			for i := 0; same && i < len(got); i++ {
				same = got[i].e == want[i].e && got[i].score == want[i].score
			}
			release()
			if !same {
				t.Fatalf("call %q (domain %q, tools %v) floor %v:\npruned %s\nfull   %s", text, domain, tools, floor, ids(got), ids(want))
			}
			if len(want) > 0 {
				calls++
			}
		}
	}
	if len(x.slots) >= 3500 || calls < 500 { // every Put appends a slot: fewer means compacted
		t.Fatalf("the test did not compact the index (%d slots) or rarely found matches (%d)", len(x.slots), calls)
	}
}

func ids(s []scored) string {
	var b strings.Builder
	for _, c := range s {
		fmt.Fprintf(&b, "%s:%.4f ", c.e.item.ID, c.score)
	}
	return b.String()
}

// TestTakeBestIsSorted: taking the best k at a time, for random k, gives
// the full order by score then id, with many ties and ids sharing their
// first 8 bytes, or their first 16.
func TestTakeBestIsSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := range 200 {
		var all []scored
		for i := range r.IntN(300) {
			id := fmt.Sprintf("trajectory-%d", r.IntN(1000)*1000+i) // unique, long shared prefix
			switch r.IntN(3) {
			case 0:
				id = fmt.Sprintf("t%d", i)
			case 1:
				id = fmt.Sprintf("load-%07d", r.IntN(1000)*1000+i) // differing past the first 8 bytes
			}
			it := &h4r.Item{ID: id}
			all = append(all, scored{e: &indexEntry{item: it}, score: float64(r.IntN(5)) / 4, idKey: idKeyOf(id)})
		}
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b scored) int {
			if c := cmp.Compare(b.score, a.score); c != 0 {
				return c
			}
			return strings.Compare(a.e.item.ID, b.e.item.ID)
		})
		var got []scored
		for len(all) > 0 {
			got = append(got, takeBest(&all, 1+r.IntN(70))...)
		}
		if !slices.EqualFunc(got, want, func(a, b scored) bool { return a.e == b.e }) {
			t.Fatalf("case %d:\ngot  %s\nwant %s", n, ids(got), ids(want))
		}
	}
}

// jaccardWithMaps and overlapWithMaps are the set measures as they were
// written before jaccard and overlapRatio scanned small slices.
func jaccardWithMaps(a, b []string) float64 {
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

func overlapWithMaps(a, b []string) float64 {
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

// TestSetMeasuresEqualMaps: jaccard and overlapRatio give exactly what
// the map-based measures give, on random slices with repeats, empty ones,
// and ones past smallSets.
func TestSetMeasuresEqualMaps(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	words := func() []string {
		n := r.IntN(4) * r.IntN(20) // often short, sometimes past smallSets
		ws := make([]string, n)
		for i := range ws {
			ws[i] = fmt.Sprintf("w%d", r.IntN(40))
		}
		return ws
	}
	long := 0
	for n := range 20_000 {
		a, b := words(), words()
		if len(a)+len(b) > smallSets || len(a) > smallSets {
			long++
		}
		if got, want := jaccard(a, b), jaccardWithMaps(a, b); got != want {
			t.Fatalf("case %d: jaccard(%v, %v) = %v, with maps %v", n, a, b, got, want)
		}
		if got, want := overlapRatio(a, b), overlapWithMaps(a, b); got != want {
			t.Fatalf("case %d: overlapRatio(%v, %v) = %v, with maps %v", n, a, b, got, want)
		}
	}
	if long < 1000 {
		t.Fatalf("only %d cases past smallSets", long)
	}
}

// TestBestMatchesEqualStableSort: keeping the best k matches while they
// come (insertBest) gives the first k of a stable sort of all of them by
// descending similarity, which Bridge.match made before: random
// similarities with many ties, k from 1 to past the number of matches.
func TestBestMatchesEqualStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for n := range 2000 {
		all := make([]Match, r.IntN(60))
		for i := range all {
			all[i] = Match{TrajectoryID: fmt.Sprintf("t%d", i), Similarity: float64(r.IntN(6)) / 5}
		}
		k := 1 + r.IntN(8)
		var got []Match
		for _, m := range all {
			got = insertBest(got, k, m.Similarity, func(sim float64) Match { m.Similarity = sim; return m })
		}
		want := slices.Clone(all)
		slices.SortStableFunc(want, func(a, b Match) int { return cmp.Compare(b.Similarity, a.Similarity) })
		want = want[:min(k, len(want))]
		if !slices.Equal(got, want) {
			t.Fatalf("case %d, k %d:\ngot  %v\nwant %v", n, k, got, want)
		}
	}
}
