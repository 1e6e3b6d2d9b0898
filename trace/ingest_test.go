package trace_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/trace"
)

func TestIngestTwiceUpdatesOneTrace(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	first := h.ingest(t, fixture(t))
	id := trace.ItemID(first.Repo, first.SHA)
	before, err := h.app.Store.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before != 3 {
		t.Fatalf("%d items after one trace with 2 decisions, want 3", before)
	}

	again := fixture(t)
	again.SHA = strings.ToUpper(again.SHA) // the same commit, written otherwise
	again.Decisions = again.Decisions[:1]
	again.Summary = "Second version"
	now = now.Add(time.Hour)
	t.Cleanup(func() { now = now.Add(-time.Hour) })
	second := h.ingest(t, again)

	after, err := h.app.Store.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after != 2 {
		t.Fatalf("%d items after re-ingesting with 1 decision, want 2 (one trace, one decision)", after)
	}
	it := h.item(t, id)
	if it.Text != "Second version" {
		t.Errorf("text %q, want the second version's summary", it.Text)
	}
	if second.ID != first.ID || !second.CreatedAt.Equal(first.CreatedAt) || !second.UpdatedAt.After(first.UpdatedAt) {
		t.Errorf("id %s→%s created %v→%v updated %v→%v: want the same id and created_at, a later updated_at",
			first.ID, second.ID, first.CreatedAt, second.CreatedAt, first.UpdatedAt, second.UpdatedAt)
	}
	if _, err := h.app.Store.Get(ctx, trace.DecisionItemID(id, 1)); h4r.ErrorCode(err) != h4r.ENOTFOUND {
		t.Errorf("the decision the second version dropped is still stored: %v", err)
	}
}

func TestIngestKeepsARecordedOutcome(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tr := h.ingest(t, fixture(t))
	at := now
	via := "#7"
	if changed, err := h.svc.ApplyOutcome(ctx, tr.Repo, tr.SHA, trace.Outcome{Status: trace.StatusLanded, LandedAt: &at, MergedVia: &via}); err != nil || !changed {
		t.Fatalf("ApplyOutcome = %v, %v", changed, err)
	}
	// The publisher sends the trace again (a retry): still landed.
	h.ingest(t, fixture(t))
	back, err := trace.FromItem(h.item(t, trace.ItemID(tr.Repo, tr.SHA)))
	if err != nil {
		t.Fatal(err)
	}
	if back.Status != trace.StatusLanded || back.MergedVia == nil || *back.MergedVia != "#7" {
		t.Fatalf("status %s merged_via %v after a republish, want landed via #7", back.Status, back.MergedVia)
	}
	dec := h.item(t, trace.DecisionItemID(trace.ItemID(tr.Repo, tr.SHA), 0))
	if dec.Metadata.Extra["status"] != "landed" || dec.Metadata.TrustValue() != trace.TrustLanded {
		t.Errorf("decision status %v trust %v, want landed and %v", dec.Metadata.Extra["status"], dec.Metadata.TrustValue(), trace.TrustLanded)
	}
}

func TestIngestRefusesInvalidWithoutWriting(t *testing.T) {
	h := newHarness(t)
	tr := fixture(t)
	tr.Decisions[1].Selected = 9
	_, err := h.svc.Ingest(context.Background(), tr)
	if h4r.ErrorCode(err) != h4r.EINVALID {
		t.Fatalf("Ingest = %v, want invalid_argument", err)
	}
	if n, _ := h.app.Store.Count(context.Background()); n != 0 {
		t.Fatalf("%d items written by an invalid trace", n)
	}
}

// fakeChat is an OpenAI-compatible chat completions server.
func fakeChat(t *testing.T, handle func(w http.ResponseWriter, body map[string]any)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		handle(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestIngestSummaries(t *testing.T) {
	cases := []struct {
		name   string
		handle func(w http.ResponseWriter, body map[string]any)
		want   string
	}{
		{"the model's summary", func(w http.ResponseWriter, body map[string]any) {
			msgs, _ := body["messages"].([]any)
			user, _ := msgs[len(msgs)-1].(map[string]any)
			if body["model"] != "summarizer-1" || !strings.Contains(user["content"].(string), "Token bucket per API key in Redis") {
				http.Error(w, "unexpected prompt", http.StatusBadRequest)
				return
			}
			_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"  Added a Redis token bucket to the auth middleware.  "},"finish_reason":"stop"}]}`)
		}, "Added a Redis token bucket to the auth middleware."},
		{"server error falls back", func(w http.ResponseWriter, _ map[string]any) {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		}, "Changes to pkg/auth, pkg/ratelimit. 2 decisions made. +182/-40 lines"},
		{"no choices falls back", func(w http.ResponseWriter, _ map[string]any) {
			_, _ = io.WriteString(w, `{"choices":[]}`)
		}, "Changes to pkg/auth, pkg/ratelimit. 2 decisions made. +182/-40 lines"},
		{"late answer falls back", func(w http.ResponseWriter, _ map[string]any) {
			time.Sleep(300 * time.Millisecond)
			_, _ = io.WriteString(w, `{"choices":[{"message":{"content":"too late"}}]}`)
		}, "Changes to pkg/auth, pkg/ratelimit. 2 decisions made. +182/-40 lines"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, calls := fakeChat(t, tc.handle)
			h := newHarness(t,
				trace.WithSummarizer(trace.NewChatSummarizer(srv.URL+"/v1", "summarizer-1", "sk-test", 10*time.Second)),
				trace.WithSummaryTimeout(100*time.Millisecond))
			tr := h.ingest(t, fixture(t))
			if tr.Summary != tc.want {
				t.Fatalf("summary %q, want %q", tr.Summary, tc.want)
			}
			if got := h.item(t, trace.ItemID(tr.Repo, tr.SHA)).Text; got != tc.want {
				t.Fatalf("item text %q, want %q", got, tc.want)
			}
			if calls.Load() != 1 {
				t.Fatalf("%d calls to the model, want 1", calls.Load())
			}
		})
	}
}

func TestIngestKeepsAGivenSummary(t *testing.T) {
	srv, calls := fakeChat(t, func(w http.ResponseWriter, _ map[string]any) {
		_, _ = io.WriteString(w, `{"choices":[{"message":{"content":"model"}}]}`)
	})
	h := newHarness(t, trace.WithSummarizer(trace.NewChatSummarizer(srv.URL+"/v1", "m", "sk-test", time.Second)))
	tr := fixture(t)
	tr.Summary = "given by the publisher"
	if got := h.ingest(t, tr).Summary; got != "given by the publisher" || calls.Load() != 0 {
		t.Fatalf("summary %q after %d model calls, want the given one and no call", got, calls.Load())
	}
}

// interleavingStore runs between once, the first time the trace id is
// read: another writer's whole update lands between a read-modify-write's
// read and its write, the race a webhook and a re-ingest of one trace run.
type interleavingStore struct {
	trace.Store
	id      string
	once    sync.Once
	between func()
}

func (s *interleavingStore) Get(ctx context.Context, id string) (*h4r.Item, error) {
	it, err := s.Store.Get(ctx, id)
	if id == s.id {
		s.once.Do(s.between)
	}
	return it, err
}

// TestOutcomeAndReingestRaceKeepsBoth: a webhook outcome and a re-ingest
// of the same trace, each landing between the other's read and write. Both
// must survive: the outcome (landed, merged_via) and the re-ingest's new
// content. Without the conditional write, the second writer wrote what it
// had read before the first, losing the first's change.
func TestOutcomeAndReingestRaceKeepsBoth(t *testing.T) {
	at := now
	via := "#7"
	landed := trace.Outcome{Status: trace.StatusLanded, LandedAt: &at, MergedVia: &via}
	newer := func(t *testing.T) *trace.CommitTrace {
		tr := fixture(t)
		tr.Summary = "the re-ingested version"
		return tr
	}
	for _, tc := range []struct {
		name string
		// first runs and is interrupted after its read by second.
		first, second func(t *testing.T, svc *trace.Service)
	}{
		{"outcome interrupted by a re-ingest",
			func(t *testing.T, svc *trace.Service) {
				tr := fixture(t)
				if changed, err := svc.ApplyOutcome(context.Background(), tr.Repo, tr.SHA, landed); err != nil || !changed {
					t.Errorf("ApplyOutcome = %v, %v", changed, err)
				}
			},
			func(t *testing.T, svc *trace.Service) {
				if _, err := svc.Ingest(context.Background(), newer(t)); err != nil {
					t.Error(err)
				}
			}},
		{"re-ingest interrupted by an outcome",
			func(t *testing.T, svc *trace.Service) {
				if _, err := svc.Ingest(context.Background(), newer(t)); err != nil {
					t.Error(err)
				}
			},
			func(t *testing.T, svc *trace.Service) {
				tr := fixture(t)
				if changed, err := svc.ApplyOutcome(context.Background(), tr.Repo, tr.SHA, landed); err != nil || !changed {
					t.Errorf("ApplyOutcome = %v, %v", changed, err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tr := h.ingest(t, fixture(t))
			id := trace.ItemID(tr.Repo, tr.SHA)
			plain := trace.NewService(h.app.Store, trace.WithClock(clock), trace.WithLogger(quiet))
			racy := &interleavingStore{Store: h.app.Store, id: id, between: func() { tc.second(t, plain) }}
			tc.first(t, trace.NewService(racy, trace.WithClock(clock), trace.WithLogger(quiet)))
			back, err := trace.FromItem(h.item(t, id))
			if err != nil {
				t.Fatal(err)
			}
			if back.Status != trace.StatusLanded || back.MergedVia == nil || *back.MergedVia != via {
				t.Errorf("status %s merged_via %v: the outcome was lost", back.Status, back.MergedVia)
			}
			if back.Summary != "the re-ingested version" {
				t.Errorf("summary %q: the re-ingest was lost", back.Summary)
			}
			dec := h.item(t, trace.DecisionItemID(id, 0))
			if dec.Metadata.Extra["status"] != "landed" {
				t.Errorf("decision status %v, want landed", dec.Metadata.Extra["status"])
			}
		})
	}
}
