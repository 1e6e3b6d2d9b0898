package decision_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/h4r/h4r/decision"
)

var authUpdate = decision.ContextUpdate{Type: "context_update", Repo: "org/repo", Areas: []string{"pkg/auth"}, CurrentTask: "rate limiting auth middleware"}

func authTrace(sha string) ct {
	return ct{sha: sha, summary: "Add token bucket rate limiting to auth middleware " + sha, status: "landed", areas: []string{"pkg/auth"}}
}

// TestSlowSubscriberIsDropped: a subscriber that does not read is dropped
// when its buffer is full, with a reason, and the other session's
// subscriber still gets every push.
func TestSlowSubscriberIsDropped(t *testing.T) {
	r := newRig(t)
	hub, err := decision.NewHub(r.svc, nil, decision.WithPushDebounce(0), decision.WithSendBuffer(1))
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	ctx := t.Context()
	slow, err := hub.Join("slow", public())
	if err != nil {
		t.Fatal(err)
	}
	fast, err := hub.Join("fast", member())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*decision.Subscriber{slow, fast} {
		if err := hub.Update(ctx, s, authUpdate); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for i := range 3 {
		r.traces(t, "org/repo", authTrace(fmt.Sprint("c", i)))
		hub.Ingested(ctx, []string{fmt.Sprintf("org/repo@c%d", i)})
		select {
		case p := <-fast.Out:
			if p.Trace["id"] != fmt.Sprintf("org/repo@c%d", i) || p.Relevance <= 0.75 {
				t.Errorf("push %d: %+v", i, p)
			}
			got++
		case <-time.After(5 * time.Second):
			t.Fatalf("push %d did not reach the reading subscriber", i)
		}
	}
	select {
	case <-slow.Dropped:
		if !strings.Contains(slow.Reason(), "reads too slowly") {
			t.Errorf("reason %q", slow.Reason())
		}
	default:
		t.Error("the subscriber that never read was not dropped")
	}
	if got != 3 {
		t.Errorf("the reading subscriber got %d pushes, want 3", got)
	}
}

// TestDebounceAndNovelty: one push per window; a precedent already
// surfaced is never pushed again; below the threshold nothing is.
func TestDebounceAndNovelty(t *testing.T) {
	r := newRig(t)
	now := t0
	hub, err := decision.NewHub(r.svc, nil, decision.WithHubClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	ctx := t.Context()
	r.traces(t, "org/repo", authTrace("a"), authTrace("b"))
	sub, err := hub.Join("s", public())
	if err != nil {
		t.Fatal(err)
	}
	pushes := func() []string {
		var ids []string
		for {
			select {
			case p := <-sub.Out:
				ids = append(ids, p.Trace["id"].(string))
			default:
				return ids
			}
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(hub.Update(ctx, sub, authUpdate))
	must(hub.Update(ctx, sub, authUpdate))
	first := pushes()
	if len(first) != 1 {
		t.Fatalf("two updates in one window pushed %v, want one", first)
	}
	now = now.Add(decision.DefaultPushDebounce)
	must(hub.Update(ctx, sub, authUpdate))
	second := pushes()
	if len(second) != 1 || second[0] == first[0] {
		t.Fatalf("after the window: %v, want the other trace (first was %v)", second, first)
	}
	now = now.Add(decision.DefaultPushDebounce)
	must(hub.Update(ctx, sub, authUpdate))
	if p := pushes(); len(p) != 0 {
		t.Errorf("both surfaced, yet pushed %v", p)
	}
	off := decision.ContextUpdate{Type: "context_update", Repo: "org/repo", Areas: []string{"pkg/billing"}}
	must(hub.Update(ctx, sub, off))
	if p := pushes(); len(p) != 0 {
		t.Errorf("an unrelated context pushed %v", p)
	}
}

// natsURL returns H4R_TEST_NATS_URL, skipping when it is unset outside CI.
func natsURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("H4R_TEST_NATS_URL")
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("H4R_TEST_NATS_URL is unset in CI")
		}
		t.Skip("H4R_TEST_NATS_URL is unset: set it to a NATS server (nats://127.0.0.1:4222) to run the cross-replica test")
	}
	return u
}

// TestFanoutAcrossReplicasOverNATS: two hubs (replicas) over one store,
// each with its own NATS connection; a trace ingested on one reaches a
// subscriber of the other, and a restricted one never reaches a public
// subscriber there.
func TestFanoutAcrossReplicasOverNATS(t *testing.T) {
	u := natsURL(t)
	r := newRig(t)
	subject := fmt.Sprintf("h4r.test.%s.%d", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano())
	hubs := make([]*decision.Hub, 2)
	for i := range hubs {
		nc, err := nats.Connect(u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if hubs[i], err = decision.NewHub(r.svc, decision.NewNATSFanout(nc, subject), decision.WithPushDebounce(0)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hubs[i].Close() })
	}
	ctx := context.Background()
	sub, err := hubs[1].Join("s", public())
	if err != nil {
		t.Fatal(err)
	}
	if err := hubs[1].Update(ctx, sub, authUpdate); err != nil {
		t.Fatal(err)
	}
	hidden := authTrace("hidden")
	hidden.groups = []string{"security"}
	r.traces(t, "org/repo", hidden, authTrace("seen"))
	hubs[0].Ingested(ctx, []string{"org/repo@hidden"})
	hubs[0].Ingested(ctx, []string{"org/repo@seen"})
	select {
	case p := <-sub.Out:
		if p.Trace["id"] != "org/repo@seen" {
			t.Errorf("replica 2 pushed %v, want org/repo@seen", p.Trace["id"])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the trace ingested on replica 1 did not reach replica 2's subscriber")
	}
	select {
	case p := <-sub.Out:
		t.Errorf("a second push: %v", p.Trace["id"])
	case <-time.After(500 * time.Millisecond):
	}
}
