package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/conversation"
	"github.com/h4r/h4r/engine"
)

// The gate over the retrieval features that read more than the caller's
// own candidates: pseudo-relevance feedback, conversation evidence and
// supersession. Each test plants a hidden item (denied, or redacted) and
// checks that the caller's pack is built as if it held only what the
// caller may see.

// callerPack answers req for spec as a caller that may not audit, with
// every visible candidate explained.
func callerPack(t testing.TB, e *engine.Engine, spec h4r.Specialist, req h4r.ContextRequest) *h4r.Pack {
	t.Helper()
	req.Explain = h4r.ExplainAll
	plan, err := req.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Run(context.Background(), spec, plan)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// packText is the pack as JSON, for a search of everything it says.
func packText(t testing.TB, p *h4r.Pack) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// openItems is the production wiring over a fresh store holding items.
func openItems(t testing.TB, items []h4r.Item) *app.App {
	t.Helper()
	a := openEmpty(t)
	if _, err := a.Store.Upsert(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	return a
}

// A redacted item lends the expansion only what the caller receives of
// it: its text is redacted, so none of its words. zorblax is only in that
// text.
func TestQueryExpansionReadsRedactedItemsAsDelivered(t *testing.T) {
	const secret = "zorblax"
	pii := h4r.Metadata{ContainsPII: true}
	a := openItems(t, []h4r.Item{
		{ID: "h1", Kind: "note", Text: "the harbor crane schedule for the monday shift"},
		{ID: "h2", Kind: "note", Text: "harbor crane schedule changes and delays"},
		{ID: "h3", Kind: "note", Text: "crane schedule at the harbor gate"},
		{ID: "hp", Kind: "note", Text: "harbor crane schedule of " + secret + " " + secret + " the operator", Metadata: pii},
		{ID: "h4", Kind: "note", Text: "harbor notes about the weather"},
	})
	p := analysis.Expansion{Docs: 4, Terms: 30, OriginalWeight: 0.5}
	const query = "harbor crane schedule"
	first, err := a.Store.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: query, Limit: engine.DefaultCandidateLimit})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(hitIDs(first[:min(p.Docs, len(first))]), "hp") {
		t.Fatalf("the redacted item is not among the top %d hits %v: the test would prove nothing", p.Docs, hitIDs(first))
	}
	rec := &recordingFullText{Generator: a.Store.FullText()}
	e := newEngineWith(t, a, rec, true, p)
	pk := callerPack(t, e, healer(), h4r.ContextRequest{Query: h4r.Query{Text: query}, Limit: 50})
	if len(rec.asked) != 2 {
		t.Fatalf("the full-text generator was asked %q, want two passes", rec.asked)
	}
	if strings.Contains(rec.asked[1], secret) {
		t.Errorf("the expanded query %q holds %s, a word of a redacted text", rec.asked[1], secret)
	}
	for _, r := range pk.Results {
		if r.ID == "hp" && (!r.Metadata.Redacted || strings.Contains(r.Text, secret)) {
			t.Errorf("the PII note was delivered unredacted: %+v", r)
		}
	}
}

// convGateItems: session s1 has three visible turns and a hidden one
// (restricted to hr) that matches the question best; t3 shares no word
// with the question and joins only through the walk.
func convGateItems() []h4r.Item {
	day := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	hidden := h4r.Metadata{RestrictedToGroups: []string{"hr"}}
	turns := []h4r.Item{
		{ID: "g-t1", Kind: "turn", Text: "user: we planted the garden beds with my daughter"},
		{ID: "g-t2", Kind: "turn", Text: "assistant: the garden beds sound lovely"},
		{ID: "g-hr", Kind: "turn", Text: "user: quokka garden beds quokka garden beds", Metadata: hidden},
		{ID: "g-t3", Kind: "turn", Text: "user: she picked tulips"},
	}
	for i := range turns {
		turns[i].Metadata.CreatedAt = day.Add(time.Duration(i) * time.Minute)
		turns[i].Metadata.Extra = map[string]any{conversation.SessionKey: "s1"}
		if i > 0 {
			turns[i].Links = []h4r.Link{{Type: "follows", Target: turns[i-1].ID, Strength: 1}}
		}
	}
	return append(turns, h4r.Item{ID: "g-doc", Kind: "document", Text: "garden tools for small garden beds"})
}

// A turn the caller may not see, inside a session whose other turns it
// sees, is not in the caller's pack, and the session's evidence does not
// depend on it: the silent turn t3 is found through the walk whether or
// not the hidden turn is the session's best hit.
func TestConversationHiddenTurn(t *testing.T) {
	cfg := testConfig(t)
	cfg.Conversation = true
	a, err := app.Open(context.Background(), cfg, app.WithClock(fixedClock), app.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if _, err := a.Store.Upsert(context.Background(), convGateItems()); err != nil {
		t.Fatal(err)
	}
	first, err := a.Store.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: "quokka garden beds", Limit: 10})
	if err != nil || len(first) == 0 || first[0].Item.ID != "g-hr" {
		t.Fatalf("full-text hits %v (%v): want the hidden turn first, the session's best hit, so that the test can fail", hitIDs(first), err)
	}
	for _, query := range []string{"quokka garden beds", "garden beds", "quokka"} {
		t.Run(query, func(t *testing.T) {
			p := callerPack(t, a.Engine, healer(), h4r.ContextRequest{Query: h4r.Query{Text: query}, Limit: 50})
			body := packText(t, p)
			if strings.Contains(body, "g-hr") || strings.Contains(body, "quokka") && !strings.Contains(query, "quokka") {
				t.Errorf("the pack names the hidden turn: %.600s", body)
			}
			if query == "quokka" {
				if len(p.Explainability.Items) != 0 || len(p.Results) != 0 {
					t.Errorf("a query only the hidden turn matches brought %v: its session's turns are evidence of it", resultIDs(p))
				}
				return
			}
			if _, ok := explained(p, "g-t3"); !ok {
				t.Errorf("the silent turn g-t3 was not found (results %v): the session was walked from the hidden turn or not at all", resultIDs(p))
			}
		})
	}
}

// TestSupersedeHiddenItems: a hidden item neither supersedes a visible
// one (by a link or by being the newest of a subject) nor is counted
// among the items superseded: exclude or valid_at leave out; a subject
// none of whose candidates the caller may see proposes nothing.
func TestSupersedeHiddenItems(t *testing.T) {
	day := func(d int) h4r.Metadata { return h4r.Metadata{CreatedAt: demoNow.AddDate(0, 0, -d)} }
	subject := func(m h4r.Metadata) h4r.Metadata {
		m.Extra = map[string]any{h4r.SubjectKey: "boat_name"}
		return m
	}
	sensitive := subject(day(1))
	high := 0.95
	sensitive.Sensitivity = &high
	oldHidden := day(40)
	oldHidden.RestrictedToGroups = []string{"hr"}
	expiredHidden := oldHidden
	expiredHidden.ValidUntil = demoNow.AddDate(0, 0, -10)
	hiddenKayak := day(2)
	hiddenKayak.Extra = map[string]any{h4r.SubjectKey: "kayak_name"}
	hiddenKayak.RestrictedToGroups = []string{"hr"}
	sup := func(id string) []h4r.Link { return []h4r.Link{{Type: h4r.LinkSupersedes, Target: id}} }
	a := openItems(t, []h4r.Item{
		{ID: "boat-old", Kind: "note", Text: "our sail boat is called Wave", Metadata: subject(day(30))},
		{ID: "boat-mid", Kind: "note", Text: "we renamed the sail boat, it is called Gull", Metadata: subject(day(10))},
		{ID: "boat-secret", Kind: "note", Text: "the sail boat is called Tern for the audit", Metadata: sensitive},
		{ID: "dock-hidden", Kind: "note", Text: "the sail boat dock is on pier four", Metadata: oldHidden},
		{ID: "dock-new", Kind: "note", Text: "the sail boat dock moved to pier nine", Metadata: day(5), Links: sup("dock-hidden")},
		{ID: "kayak-secret", Kind: "note", Text: "the kayak is called Puffin for the audit", Metadata: hiddenKayak},
		{ID: "kayak-old", Kind: "note", Text: "the kayak is called Skua", Metadata: day(20)},
		{ID: "dock-expired", Kind: "note", Text: "the sail boat dock permit for pier two", Metadata: expiredHidden},
	})
	spec := healer()
	t.Run("a subject whose items are all hidden proposes nothing", func(t *testing.T) {
		p := callerPack(t, a.Engine, spec, h4r.ContextRequest{Query: h4r.Query{Text: "kayak called"}, Limit: 50})
		if body := packText(t, p); strings.Contains(body, "kayak-secret") || strings.Contains(body, "Puffin") {
			t.Errorf("the pack names the hidden item: %.600s", body)
		}
		if _, ok := explained(p, "kayak-old"); !ok {
			t.Errorf("kayak-old, which the caller may see, is missing (results %v)", resultIDs(p))
		}
	})
	t.Run("the newest of a subject is the newest visible one", func(t *testing.T) {
		p := callerPack(t, a.Engine, spec, h4r.ContextRequest{Query: h4r.Query{Text: "sail boat called"}, Limit: 50})
		ex, ok := explained(p, "boat-old")
		if !ok || ex.SupersededBy != "boat-mid" {
			t.Errorf("boat-old is %+v (explained %v): want superseded by boat-mid, as if boat-secret did not exist", ex, ok)
		}
		if body := packText(t, p); strings.Contains(body, "boat-secret") {
			t.Errorf("the pack names the hidden item: %.600s", body)
		}
	})
	t.Run("exclude counts only visible items", func(t *testing.T) {
		req := h4r.ContextRequest{Query: h4r.Query{Text: "dock pier"}, Superseded: h4r.SupersededExclude, Limit: 50}
		if seen := callerPack(t, a.Engine, hrToo(spec), req); !slices.ContainsFunc(seen.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "1 superseded candidates") }) {
			t.Fatalf("a caller that may see dock-hidden is not told it was left out (warnings %v): the test would prove nothing", seen.Explainability.Warnings)
		}
		p := callerPack(t, a.Engine, spec, req)
		for _, w := range p.Explainability.Warnings {
			if strings.Contains(w, "superseded candidates were left out") {
				t.Errorf("warning %q counts dock-hidden, which the caller may not see", w)
			}
		}
		sameTotals(t, p, callerPack(t, a.Engine, spec, h4r.ContextRequest{Query: req.Query, Superseded: h4r.SupersededKeep, Limit: req.Limit}))
	})
	t.Run("valid_at counts only visible items", func(t *testing.T) {
		req := h4r.ContextRequest{Query: h4r.Query{Text: "sail boat dock pier permit"}, ValidAt: demoNow.Format(time.RFC3339), Limit: 50}
		if seen := callerPack(t, a.Engine, hrToo(spec), req); !slices.ContainsFunc(seen.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "1 candidates not valid at") }) {
			t.Fatalf("a caller that may see dock-expired is not told it was left out (warnings %v): the test would prove nothing", seen.Explainability.Warnings)
		}
		p := callerPack(t, a.Engine, spec, req)
		for _, w := range p.Explainability.Warnings {
			if strings.Contains(w, "not valid at") {
				t.Errorf("warning %q counts dock-expired, which the caller may not see", w)
			}
		}
		sameTotals(t, p, callerPack(t, a.Engine, spec, h4r.ContextRequest{Query: req.Query, Limit: req.Limit}))
	})
}

// sameTotals fails unless two packs, which differ only by what the
// request leaves out of items the caller may not see, count alike.
func sameTotals(t *testing.T, got, want *h4r.Pack) {
	t.Helper()
	g, w := got.Explainability.Slicing, want.Explainability.Slicing
	if g.TotalCandidates != w.TotalCandidates || g.TotalDroppedPolicy != w.TotalDroppedPolicy || got.TotalCount != want.TotalCount {
		t.Errorf("candidates %d, dropped by policy %d, total %d; want %d, %d, %d: the totals count the hidden item the request left out",
			g.TotalCandidates, g.TotalDroppedPolicy, got.TotalCount, w.TotalCandidates, w.TotalDroppedPolicy, want.TotalCount)
	}
}

// hrToo is spec with the hr group too.
func hrToo(spec h4r.Specialist) h4r.Specialist {
	spec.AuthorizedGroups = append(slices.Clone(spec.AuthorizedGroups), "hr")
	return spec
}

// A hidden candidate does not decide whether the time a question names
// separates the candidates: every visible one is inside the window, so
// the time is no evidence for this caller, whatever the hidden one's date.
func TestConversationTimeHiddenCandidate(t *testing.T) {
	cfg := testConfig(t)
	cfg.Conversation = true
	a, err := app.Open(context.Background(), cfg, app.WithClock(fixedClock), app.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	at := func(m h4r.Metadata, d time.Time) h4r.Metadata { m.CreatedAt = d; return m }
	inside := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	items := []h4r.Item{
		{ID: "w-1", Kind: "note", Text: "we watered the garden", Metadata: at(h4r.Metadata{}, inside)},
		{ID: "w-2", Kind: "note", Text: "the garden fence is painted", Metadata: at(h4r.Metadata{}, inside.Add(time.Hour))},
		{ID: "w-hr", Kind: "note", Text: "the garden budget of the staff", Metadata: at(h4r.Metadata{RestrictedToGroups: []string{"hr"}}, inside.AddDate(0, -3, 0))},
	}
	if _, err := a.Store.Upsert(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	req := h4r.ContextRequest{Query: h4r.Query{Text: "what about the garden two weeks ago"}, Limit: 50,
		AsOf: time.Date(2026, 5, 15, 12, 0, 0, 0, time.UTC).Format(time.RFC3339)}
	if seen := callerPack(t, a.Engine, hrToo(healer()), req); !slices.ContainsFunc(seen.Results, func(r h4r.Result) bool { return strings.Contains(r.Metadata.Source, conversation.GenTime) }) {
		t.Fatalf("a caller that may see w-hr gets no time evidence (results %+v): the test would prove nothing", seen.Results)
	}
	p := callerPack(t, a.Engine, healer(), req)
	if len(p.Results) != 2 {
		t.Fatalf("results %v, want w-1 and w-2", resultIDs(p))
	}
	for _, r := range p.Results {
		if strings.Contains(r.Metadata.Source, conversation.GenTime) {
			t.Errorf("%s has time evidence (source %s): only the hidden w-hr is outside the window", r.ID, r.Metadata.Source)
		}
	}
}
