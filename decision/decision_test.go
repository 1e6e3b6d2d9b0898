package decision_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/scs"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/tokens"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// rig is a service over a real SQLite store and the bundled OPA policy.
type rig struct {
	store *sqlite.Store
	svc   *decision.Service
}

func newRig(tb testing.TB) *rig {
	tb.Helper()
	ctx := context.Background()
	counter, err := tokens.New(tokens.CL100K)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "h4r.db"), sqlite.WithTokenCounter(counter), sqlite.WithClock(func() time.Time { return t0 }), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	pol, err := policy.New(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return &rig{store: st, svc: decision.New(st, scs.New(pol, counter), decision.WithClock(func() time.Time { return t0 }))}
}

func public() h4r.Specialist { return h4r.Anonymous() }

func member() h4r.Specialist {
	s := h4r.Anonymous()
	s.ID, s.SecurityLevel, s.AuthorizedGroups = "lead", h4r.Confidential, []string{"security"}
	return s
}

func trace(id, typ, epic string, day int, extra string) decision.Trace {
	var t decision.Trace
	body := `{"id":"` + id + `","decision_type":"` + typ + `","epic_id":"` + epic + `","agent_name":"coordinator","project_key":"/repo","decision":{"strategy":"file-based"}` + extra + `}`
	if err := json.Unmarshal([]byte(body), &t); err != nil {
		panic(err)
	}
	t.Timestamp = decision.Time{Time: t0.AddDate(0, 0, day)}
	return t
}

func TestPrepareNamesTheField(t *testing.T) {
	tests := []struct {
		name  string
		trace decision.Trace
		field string
	}{
		{"decision type that is no name", trace("dt-a", "Strategy Pick", "", 0, ""), "decision_type"},
		{"missing decision type", trace("dt-a", "", "", 0, ""), "decision_type"},
		{"alternatives not a list", trace("dt-a", decision.TypeDecompositionStrategy, "", 0, `,"alternatives":{"option":"feature-based"}`), "alternatives"},
		{"alternatives a string", trace("dt-a", decision.TypeDecompositionStrategy, "", 0, `,"alternatives":"feature-based"`), "alternatives"},
		{"alternative of the wrong shape", trace("dt-a", decision.TypeDecompositionStrategy, "", 0, `,"alternatives":[{"option":"x","why":"y"}]`), "alternatives[0]"},
		{"alternative without option", trace("dt-a", decision.TypeDecompositionStrategy, "", 0, `,"alternatives":[{"rejected_because":"y"}]`), "alternatives[0].option"},
		{"precedent not a list", trace("dt-a", decision.TypeDecompositionStrategy, "", 0, `,"precedent_cited":"mj100"`), "precedent_cited"},
		{"precedent naming both", trace("dt-a", decision.TypeDecompositionStrategy, "", 0, `,"precedent_cited":[{"epic_id":"mj1","decision_id":"dt-b"}]`), "precedent_cited[0]"},
		{"bad link", trace("dt-a", decision.TypeDecompositionStrategy, "", 0, `,"links":[{"type":"applies_pattern","target":"m","targetType":"Memory"}]`), "links[0].targetType"},
	}
	missingAgent := trace("dt-a", decision.TypeReviewApproval, "", 0, "")
	missingAgent.AgentName = ""
	noDecision := trace("dt-a", decision.TypeReviewApproval, "", 0, "")
	noDecision.Decision = nil
	tests = append(tests, struct {
		name  string
		trace decision.Trace
		field string
	}{"missing agent", missingAgent, "agent_name"}, struct {
		name  string
		trace decision.Trace
		field string
	}{"missing decision", noDecision, "decision"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decision.Prepare(tt.trace, "decision_traces[1]", t0)
			if h4r.ErrorCode(err) != h4r.EINVALID {
				t.Fatalf("err = %v, want invalid_argument", err)
			}
			if got := err.(*h4r.Error).Field; got != "decision_traces[1]."+tt.field {
				t.Errorf("field = %q, want %q (%v)", got, "decision_traces[1]."+tt.field, err)
			}
		})
	}
}

func TestPrepareGeneratesIDAndMapsToItem(t *testing.T) {
	tr := trace("", decision.TypeFileAssignment, "mj123", 0, `,"decision":{"files":["src/auth.ts","src/a.ts"],"assigned_to":"w1"},
		"alternatives":[{"option":"feature-based","rejected_because":"70% failure rate"}],
		"precedent_cited":[{"epic_id":"mj100","reason":"solved OAuth refresh same way"}]`)
	p, err := decision.Prepare(tr, "", t0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Trace.ID, "dt-") || len(p.Trace.ID) != 24 {
		t.Errorf("generated id %q, want dt- and 21 characters", p.Trace.ID)
	}
	it, err := p.Item()
	if err != nil {
		t.Fatal(err)
	}
	if it.Kind != decision.KindTrace || it.Metadata.Extra["decision_type"] != decision.TypeFileAssignment || it.Metadata.Extra["epic_id"] != "mj123" {
		t.Errorf("item kind %q, metadata %v", it.Kind, it.Metadata.Extra)
	}
	want := []h4r.Link{
		{Type: h4r.LinkCitesPrecedent, Target: "mj100", TargetType: h4r.TargetEpic, Strength: 1, Context: "solved OAuth refresh same way"},
		{Type: h4r.LinkAssignsFile, Target: "src/auth.ts", TargetType: h4r.TargetFile, Strength: 1},
		{Type: h4r.LinkAssignsFile, Target: "src/a.ts", TargetType: h4r.TargetFile, Strength: 1},
	}
	if !slices.Equal(it.Links, want) {
		t.Errorf("links = %+v, want %+v", it.Links, want)
	}
	if !strings.Contains(it.Text, "Rejected feature-based because 70% failure rate") {
		t.Errorf("text %q does not say what was rejected", it.Text)
	}
	if alts, _ := it.Content["alternatives"].([]any); len(alts) != 1 {
		t.Errorf("content alternatives = %v", it.Content["alternatives"])
	}
	if ts, _ := it.Content["timestamp"].(float64); int64(ts) != t0.UnixMilli() || !it.Metadata.CreatedAt.Equal(t0) {
		t.Errorf("timestamp %v, createdAt %v; want %v", it.Content["timestamp"], it.Metadata.CreatedAt, t0)
	}
}

func TestTimeReadsMillisecondsAndRFC3339(t *testing.T) {
	for _, in := range []string{`1772366400000`, `"2026-03-01T12:00:00Z"`} {
		var tm decision.Time
		if err := json.Unmarshal([]byte(in), &tm); err != nil || !tm.Equal(t0) {
			t.Errorf("%s → %v, %v; want %v", in, tm, err, t0)
		}
	}
	var tm decision.Time
	if err := json.Unmarshal([]byte(`"yesterday"`), &tm); err == nil {
		t.Error(`"yesterday" was accepted`)
	}
}

func TestLinkToMissingDecisionIsRefused(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	cites := trace("dt-b", decision.TypeConflictResolution, "mj2", 1, `,"precedent_cited":[{"decision_id":"dt-nope","reason":"same conflict"}]`)
	_, err := r.svc.RecordTraces(ctx, []decision.Trace{cites}, "decision_traces", false)
	if h4r.ErrorCode(err) != h4r.EINVALID || err.(*h4r.Error).Field != "decision_traces[0].precedent_cited[0].decision_id" {
		t.Fatalf("err = %v, want invalid_argument on decision_traces[0].precedent_cited[0].decision_id", err)
	}
	if _, err := r.store.Get(ctx, "dt-b"); h4r.ErrorCode(err) != h4r.ENOTFOUND {
		t.Errorf("the refused trace was written: %v", err)
	}
	linked := trace("dt-c", decision.TypeConflictResolution, "mj2", 1, `,"links":[{"type":"resolves_conflict_from","target":"dt-nope","targetType":"decision"}]`)
	if _, err := r.svc.RecordTraces(ctx, []decision.Trace{linked}, "", true); h4r.ErrorCode(err) != h4r.EINVALID || err.(*h4r.Error).Field != "links[0].target" {
		t.Errorf("err = %v, want invalid_argument on links[0].target", err)
	}
	// Earlier in the same batch counts.
	first := trace("dt-a", decision.TypeConflictResolution, "mj2", 0, "")
	if _, err := r.svc.RecordTraces(ctx, []decision.Trace{first, {ID: "dt-b", DecisionType: cites.DecisionType, AgentName: "c", ProjectKey: "p",
		Decision: json.RawMessage(`"merge"`), PrecedentCited: json.RawMessage(`[{"decision_id":"dt-a"}]`)}}, "decision_traces", false); err != nil {
		t.Errorf("a batch citing its own earlier trace: %v", err)
	}
	if _, err := r.svc.RecordEvents(ctx, []decision.Event{{Type: "subtask_outcome", DecisionID: "dt-nope"}}, "", true); h4r.ErrorCode(err) != h4r.EINVALID || err.(*h4r.Error).Field != "decision_id" {
		t.Errorf("event for a missing decision: %v, want invalid_argument on decision_id", err)
	}
}

// seed records three decisions citing mj100 (one restricted to the
// security group), one citing mj200, a file-assignment history of
// src/auth.ts with outcomes, and a rejected review.
func seed(t *testing.T, r *rig) {
	t.Helper()
	ctx := t.Context()
	restricted := trace("dt-secret", decision.TypeExceptionGranted, "mj104", 4, `,"precedent_cited":[{"epic_id":"mj100","reason":"incident response"}],"metadata":{"restrictedToGroups":["security"]}`)
	traces := []decision.Trace{
		trace("dt-1", decision.TypeDecompositionStrategy, "mj101", 1, `,"precedent_cited":[{"epic_id":"mj100","reason":"solved OAuth refresh same way"}],"alternatives":[{"option":"feature-based","rejected_because":"70% failure rate"}]`),
		trace("dt-2", decision.TypeDecompositionStrategy, "mj102", 2, `,"precedent_cited":[{"epic_id":"mj100","reason":"same split"}],"links":[{"type":"applies_pattern","target":"mem-oauth-buffer","targetType":"memory"}]`),
		trace("dt-3", decision.TypeExceptionGranted, "mj103", 3, `,"precedent_cited":[{"epic_id":"mj100"},{"epic_id":"mj200"}]`),
		restricted,
		trace("dt-f1", decision.TypeFileAssignment, "mj101", 1, `,"decision":{"files":["src/auth.ts"],"assigned_to":"w1"}`),
		trace("dt-f2", decision.TypeFileAssignment, "mj102", 2, `,"decision":{"files":["src/auth.ts","src/b.ts"],"assigned_to":"w2"}`),
		trace("dt-r1", decision.TypeReviewApproval, "mj101", 5, `,"decision":{"status":"needs_changes","issues":[]}`),
		trace("dt-r2", decision.TypeReviewApproval, "mj101", 6, `,"decision":{"status":"approved"}`),
	}
	if _, err := r.svc.RecordTraces(ctx, traces, "decision_traces", false); err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	if _, err := r.svc.RecordEvents(ctx, []decision.Event{
		{ID: "ev-1", Type: "subtask_outcome", DecisionID: "dt-f1", Success: &no, Timestamp: decision.Time{Time: t0.AddDate(0, 0, 2)}},
		{ID: "ev-2", Type: "subtask_outcome", DecisionID: "dt-f2", Success: &yes, Timestamp: decision.Time{Time: t0.AddDate(0, 0, 3)}},
	}, "events", false); err != nil {
		t.Fatal(err)
	}
}

func ids(a *decision.Answer) []string {
	var out []string
	for _, w := range a.DecisionTraces {
		out = append(out, w["id"].(string))
	}
	return out
}

func TestPrecedentQueries(t *testing.T) {
	r := newRig(t)
	seed(t, r)
	ctx := t.Context()
	tests := []struct {
		name     string
		spec     h4r.Specialist
		ask      func(h4r.Specialist) (*decision.Answer, error)
		want     []string
		withheld int
	}{
		{"citing mj100, public", public(), func(s h4r.Specialist) (*decision.Answer, error) { return r.svc.Citing(ctx, s, "mj100", 0) }, []string{"dt-3", "dt-2", "dt-1"}, 1},
		{"citing mj100, security group", member(), func(s h4r.Specialist) (*decision.Answer, error) { return r.svc.Citing(ctx, s, "mj100", 0) }, []string{"dt-secret", "dt-3", "dt-2", "dt-1"}, 0},
		{"citing mj200", public(), func(s h4r.Specialist) (*decision.Answer, error) { return r.svc.Citing(ctx, s, "mj200", 0) }, []string{"dt-3"}, 0},
		{"applying a pattern", public(), func(s h4r.Specialist) (*decision.Answer, error) {
			return r.svc.ApplyingPattern(ctx, s, "mem-oauth-buffer", 0)
		}, []string{"dt-2"}, 0},
		{"file history", public(), func(s h4r.Specialist) (*decision.Answer, error) { return r.svc.FileHistory(ctx, s, "src/auth.ts", 0) }, []string{"dt-f2", "dt-f1"}, 0},
		{"reviews rejected", public(), func(s h4r.Specialist) (*decision.Answer, error) { return r.svc.ReviewsRejected(ctx, s, 0) }, []string{"dt-r1"}, 0},
		{"limit counts what policy lets through", public(), func(s h4r.Specialist) (*decision.Answer, error) { return r.svc.Citing(ctx, s, "mj100", 2) }, []string{"dt-3", "dt-2"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.ask(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(a); !slices.Equal(got, tt.want) || a.Withheld != tt.withheld {
				t.Errorf("got %v (withheld %d), want %v (withheld %d)", got, a.Withheld, tt.want, tt.withheld)
			}
		})
	}
	a, err := r.svc.FileHistory(ctx, public(), "src/auth.ts", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, wantSuccess := range []bool{true, false} {
		o, _ := a.DecisionTraces[i]["outcome"].(decision.Wire)
		if o == nil || o["success"] != wantSuccess {
			t.Errorf("%s outcome = %v, want success %v", a.DecisionTraces[i]["id"], o, wantSuccess)
		}
	}
	c, err := r.svc.Citing(ctx, public(), "mj100", 0)
	if err != nil {
		t.Fatal(err)
	}
	if alts, _ := c.DecisionTraces[2]["alternatives"].([]any); len(alts) != 1 {
		t.Errorf("dt-1 alternatives = %v, want one", c.DecisionTraces[2]["alternatives"])
	}
}

func TestGetWithContext(t *testing.T) {
	r := newRig(t)
	seed(t, r)
	ctx := t.Context()
	wc, err := r.svc.Get(ctx, public(), "dt-f1")
	if err != nil {
		t.Fatal(err)
	}
	if len(wc.Links) != 1 || wc.Links[0].EntityType != "file" || wc.Links[0].EntityID != "src/auth.ts" || wc.Links[0].LinkType != h4r.LinkAssignsFile {
		t.Errorf("links = %+v", wc.Links)
	}
	if wc.Outcome == nil || wc.Outcome["id"] != "ev-1" {
		t.Errorf("outcome = %v, want ev-1", wc.Outcome)
	}
	if _, err := r.svc.Get(ctx, public(), "dt-secret"); h4r.ErrorCode(err) != h4r.ENOTFOUND {
		t.Errorf("a restricted decision for a public caller: %v, want not_found", err)
	}
	if _, err := r.svc.Get(ctx, member(), "dt-secret"); err != nil {
		t.Errorf("a restricted decision for its group: %v", err)
	}
	if _, err := r.svc.Get(ctx, public(), "ev-1"); h4r.ErrorCode(err) != h4r.ENOTFOUND {
		t.Errorf("an event asked for as a decision: %v, want not_found", err)
	}
}

// TestLinksToHiddenItemsAreDropped: a public decision citing a restricted
// decision does not tell a public caller the restricted one's id.
func TestLinksToHiddenItemsAreDropped(t *testing.T) {
	r := newRig(t)
	seed(t, r)
	ctx := t.Context()
	cites := trace("dt-x", decision.TypeConflictResolution, "mj9", 9, `,"precedent_cited":[{"decision_id":"dt-secret"},{"epic_id":"mj100"}]`)
	if _, err := r.svc.RecordTraces(ctx, []decision.Trace{cites}, "", true); err != nil {
		t.Fatal(err)
	}
	wc, err := r.svc.Get(ctx, public(), "dt-x")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range wc.Links {
		if l.EntityID == "dt-secret" {
			t.Errorf("the link to the restricted decision reached a public caller: %+v", wc.Links)
		}
	}
	if len(wc.Links) != 1 {
		t.Errorf("links = %+v, want the epic link only", wc.Links)
	}
}
