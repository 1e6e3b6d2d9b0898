package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/server"
)

// newAmbientStack is the decision stack with an ambient hub over it.
func newAmbientStack(t *testing.T, opts ...decision.HubOption) *decisionStack {
	t.Helper()
	var hub *decision.Hub
	d := newDecisionStack(t, server.WithAmbient(lazyHub{&hub}, time.Second))
	h, err := decision.NewHub(d.app.Decisions, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	hub = h
	return d
}

// lazyHub lets the hub be built after the app the stack opens.
type lazyHub struct{ h **decision.Hub }

func (l lazyHub) Join(sid string, spec h4r.Specialist) (*decision.Subscriber, error) {
	return (*l.h).Join(sid, spec)
}
func (l lazyHub) Leave(s *decision.Subscriber) { (*l.h).Leave(s) }
func (l lazyHub) Update(ctx context.Context, s *decision.Subscriber, u decision.ContextUpdate) error {
	return (*l.h).Update(ctx, s, u)
}
func (l lazyHub) Ingested(ctx context.Context, ids []string) { (*l.h).Ingested(ctx, ids) }

// wsClient reads its connection all the time, as a real client does (a
// coder/websocket client answers pings only while reading), and hands
// the messages to the test.
type wsClient struct {
	c      *websocket.Conn
	in     chan []byte
	closed chan error
}

func wsDial(t *testing.T, base, session, key string) (*wsClient, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(base, "http") + "/v1/subscribe?session_id=" + session
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.CloseNow() })
	cl := &wsClient{c: c, in: make(chan []byte, 64), closed: make(chan error, 1)}
	go func() {
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				cl.closed <- err
				close(cl.in)
				return
			}
			cl.in <- b
		}
	}()
	return cl, nil
}

func wsSend(t *testing.T, c *wsClient, msg string) {
	t.Helper()
	if err := c.c.Write(t.Context(), websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// next returns the next message within d; nil when none came.
func next(t *testing.T, c *wsClient, d time.Duration) map[string]any {
	t.Helper()
	select {
	case b, ok := <-c.in:
		if !ok {
			t.Fatalf("the connection closed: %v", <-c.closed)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	case <-time.After(d):
		return nil
	}
}

const authUpdate = `{"type": "context_update", "repo": "/repo", "areas": ["pkg/auth"], "current_task": "OAuth refresh split across workers", "recent_decisions": ["file-based strategy"]}`

// TestSubscribePushesOnce: step 4 of the done-when. A matching
// context_update gets exactly one push within the debounce window, never
// the precedent restricted to ops; bad messages get error frames and the
// connection stays up.
func TestSubscribePushesOnce(t *testing.T) {
	d := newAmbientStack(t)
	recordMJ100(t, d)
	c, err := wsDial(t, d.base, "s1", publicKey)
	if err != nil {
		t.Fatal(err)
	}
	wsSend(t, c, `not json`)
	if m := next(t, c, 5*time.Second); m["type"] != "error" {
		t.Errorf("not JSON: %v, want an error frame", m)
	}
	wsSend(t, c, `{"type": "subscribe_all"}`)
	if m := next(t, c, 5*time.Second); m["type"] != "error" || m["error"].(map[string]any)["field"] != "type" {
		t.Errorf("unknown type: %v, want an error frame naming type", m)
	}
	wsSend(t, c, authUpdate)
	m := next(t, c, 10*time.Second)
	if m == nil || m["type"] != "precedent" {
		t.Fatalf("no push after a matching context_update: %v", m)
	}
	tr := m["trace"].(map[string]any)
	if id := tr["id"]; id == "dt-ops-only" || !strings.HasPrefix(id.(string), "dt-") {
		t.Errorf("pushed %v to a public key", id)
	}
	if rel := m["relevance"].(float64); rel <= 0.75 || m["trigger"] == "" || m["suggestion"] == "" {
		t.Errorf("push %v", m)
	}
	// Within the debounce window nothing more comes, however many updates.
	wsSend(t, c, authUpdate)
	wsSend(t, c, strings.Replace(authUpdate, "OAuth refresh", "merge auth exception", 1))
	if m := next(t, c, time.Second); m != nil {
		t.Errorf("a second push within the debounce window: %v", m)
	}
	// A context that only the ops-only precedent matches: a public
	// session gets nothing, the ops key's gets it.
	rotate := `{"type": "context_update", "repo": "/repo", "areas": ["pkg/auth"], "current_task": "rotate prod keys"}`
	p, err := wsDial(t, d.base, "s2", publicKey)
	if err != nil {
		t.Fatal(err)
	}
	wsSend(t, p, rotate)
	if m := next(t, p, 2*time.Second); m != nil && m["type"] == "precedent" && m["trace"].(map[string]any)["id"] == "dt-ops-only" {
		t.Errorf("the ops-only precedent reached a public key: %v", m)
	}
	r, err := wsDial(t, d.base, "s3", restrictedKey)
	if err != nil {
		t.Fatal(err)
	}
	wsSend(t, r, rotate)
	if m := next(t, r, 10*time.Second); m == nil || m["trace"].(map[string]any)["id"] != "dt-ops-only" {
		t.Errorf("ops session got %v, want dt-ops-only", m)
	}
}

// TestSubscribePushesIngestedTraces: a trace ingested after the context
// update reaches the session when new and relevant (debounce off here).
func TestSubscribePushesIngestedTraces(t *testing.T) {
	d := newAmbientStack(t, decision.WithPushDebounce(0))
	c, err := wsDial(t, d.base, "s1", publicKey)
	if err != nil {
		t.Fatal(err)
	}
	wsSend(t, c, authUpdate)
	if m := next(t, c, time.Second); m != nil {
		t.Fatalf("push with nothing stored: %v", m)
	}
	hidden := `{"id": "dt-hidden", "decision_type": "file_assignment", "agent_name": "c", "project_key": "/repo", "decision": {"files": ["a"]},
		"rationale": "OAuth refresh split across workers", "metadata": {"tags": ["pkg/auth"], "restrictedToGroups": ["ops"]}}`
	if r := post(t, d.base+"/v1/decision-traces", hidden, bearer(ingestKey)...); r.status != http.StatusOK {
		t.Fatal(string(r.body))
	}
	if m := next(t, c, time.Second); m != nil {
		t.Fatalf("a restricted trace was pushed to a public key: %v", m)
	}
	visible := strings.NewReplacer("dt-hidden", "dt-visible", `, "restrictedToGroups": ["ops"]`, "").Replace(hidden)
	if r := post(t, d.base+"/v1/decision-traces", visible, bearer(ingestKey)...); r.status != http.StatusOK {
		t.Fatal(string(r.body))
	}
	if m := next(t, c, 10*time.Second); m == nil || m["trace"].(map[string]any)["id"] != "dt-visible" {
		t.Errorf("after ingest: %v, want dt-visible", m)
	}
}

func closeReason(t *testing.T, c *wsClient) string {
	t.Helper()
	select {
	case err := <-c.closed:
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("want a close frame, got %v", err)
		}
		if ce.Code != websocket.StatusPolicyViolation {
			t.Errorf("close code %v", ce.Code)
		}
		return ce.Reason
	case <-time.After(10 * time.Second):
		t.Fatal("the connection was not closed")
	}
	return ""
}

// TestSubscribeLimits: at most 10 connections per session, and the key's
// cap (here 20) refuses the rest of many connections with a clear reason;
// the gauge counts the open ones.
func TestSubscribeLimits(t *testing.T) {
	d := newAmbientStack(t, decision.WithMaxConnectionsPerPrincipal(20))
	for i := range 10 {
		if _, err := wsDial(t, d.base, "one", publicKey); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	c, err := wsDial(t, d.base, "one", publicKey)
	if err != nil {
		t.Fatal(err)
	}
	if r := closeReason(t, c); !strings.Contains(r, "session already has 10 connections") {
		t.Errorf("11th in a session: %q", r)
	}
	refused := 0
	for i := range 30 {
		c, err := wsDial(t, d.base, "many-"+string(rune('a'+i)), publicKey)
		if err != nil {
			t.Fatal(err)
		}
		if i >= 10 {
			if r := closeReason(t, c); strings.Contains(r, "this API key already has 20 WebSocket connections open") {
				refused++
			} else {
				t.Errorf("connection %d past the cap: close reason %q", i, r)
			}
		}
	}
	if refused != 20 {
		t.Errorf("%d of the 20 past the key's cap were refused with the reason", refused)
	}
	r := do(t, http.MethodGet, d.base+"/metrics", nil, bearer(adminKey)...)
	if !strings.Contains(string(r.body), "context_websocket_connections_active 20") {
		t.Errorf("gauge: %s", grepLine(string(r.body), "context_websocket"))
	}
	// Another key is not limited by this one's connections.
	o, err := wsDial(t, d.base, "other", restrictedKey)
	if err != nil {
		t.Fatal(err)
	}
	wsSend(t, o, `{"type": "context_update"}`)
	if m := next(t, o, 5*time.Second); m["type"] != "error" || m["error"].(map[string]any)["field"] != "repo" {
		t.Errorf("another key's connection: %v", m)
	}
}

func grepLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return "(none)"
}

// TestDoneWhen is a new user's first session with decisions: record three
// decisions citing mj100, ask for them (newest first, with alternatives),
// get them from /v1/prefetch for the area, and receive exactly one push
// over the WebSocket within the debounce window. The fourth, restricted to
// the ops group, never reaches the public key on any of the three reads.
func TestDoneWhen(t *testing.T) {
	d := newAmbientStack(t)
	// 1. Record.
	recordMJ100(t, d)
	// 2. Ask.
	a := getAnswer(t, d.base+"/v1/decision-traces?preset=decision_traces_by_precedent&epic=mj100", publicKey)
	if got := answerIDs(a); !slices.Equal(got, []string{"dt-three", "dt-two", "dt-one"}) {
		t.Fatalf("decisions citing mj100: %v", got)
	}
	for _, dt := range a.DecisionTraces {
		if _, ok := dt["alternatives"]; !ok {
			t.Errorf("%v has no alternatives", dt["id"])
		}
	}
	// 3. Prefetch for the area.
	r := post(t, d.base+"/v1/prefetch", `{"repo": "/repo", "areas": ["pkg/auth"]}`, bearer(publicKey)...)
	var pf struct {
		Precedents []struct {
			Trace map[string]any `json:"trace"`
		} `json:"precedents"`
	}
	if err := json.Unmarshal(r.body, &pf); err != nil || r.status != http.StatusOK {
		t.Fatalf("prefetch: %d %s", r.status, r.body)
	}
	var ids []string
	for _, p := range pf.Precedents {
		ids = append(ids, p.Trace["id"].(string))
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"dt-one", "dt-three", "dt-two"}) {
		t.Errorf("prefetch precedents %v, want the three", ids)
	}
	// 4. Subscribe; one push within the window.
	c, err := wsDial(t, d.base, "new-user", publicKey)
	if err != nil {
		t.Fatal(err)
	}
	wsSend(t, c, authUpdate)
	m := next(t, c, 10*time.Second)
	if m == nil || m["type"] != "precedent" {
		t.Fatalf("no push: %v", m)
	}
	if id := m["trace"].(map[string]any)["id"]; !slices.Contains([]string{"dt-one", "dt-two", "dt-three"}, id.(string)) {
		t.Errorf("pushed %v", id)
	}
	wsSend(t, c, authUpdate)
	if m := next(t, c, 2*time.Second); m != nil {
		t.Errorf("a second push within the debounce window: %v", m)
	}
}

// TestSubscribeDropsAClientThatNeverPongs: the server pings every second
// here; a client that never reads never answers, and its connection is
// closed (the gauge goes back to 0), while a reading client stays.
func TestSubscribeDropsAClientThatNeverPongs(t *testing.T) {
	d := newAmbientStack(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(d.base, "http") + "/v1/subscribe?session_id=mute"
	mute, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + publicKey}}})
	if err != nil {
		t.Fatal(err)
	}
	defer mute.CloseNow()
	alive, err := wsDial(t, d.base, "alive", publicKey)
	if err != nil {
		t.Fatal(err)
	}
	gauge := func() string {
		for _, l := range strings.Split(string(do(t, http.MethodGet, d.base+"/metrics", nil, bearer(adminKey)...).body), "\n") {
			if strings.HasPrefix(l, "context_websocket_connections_active ") {
				return strings.TrimPrefix(l, "context_websocket_connections_active ")
			}
		}
		return ""
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for gauge() != want {
			if time.Now().After(deadline) {
				t.Fatalf("gauge %q, want %s", gauge(), want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("2")
	waitFor("1") // the mute client is dropped after a missed pong
	select {
	case err := <-alive.closed:
		t.Errorf("the reading client was closed: %v", err)
	default:
	}
}
