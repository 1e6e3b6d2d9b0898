package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/server"
)

// mcpInit opens an MCP session of key at protocol 2025-03-26, the last
// that allows JSON-RPC batches, and returns its headers for later calls.
func mcpInit(t *testing.T, base, key string) []string {
	t.Helper()
	h := append(bearer(key), "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	r := do(t, http.MethodPost, base+"/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`), h...)
	if r.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	return append(h, "Mcp-Session-Id", r.header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version", "2025-03-26")
}

// pings is a JSON-RPC batch of n pings.
func pings(n int) []byte {
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i)
	}
	return []byte("[" + strings.Join(calls, ",") + "]")
}

// TestMCPBatchCountsEachCall: every call of a JSON-RPC batch on /mcp
// counts against the key's rate limit, and a batch has a size cap. The
// slow key (2 a minute) opens a session (1) and sends a batch of 2: the
// batch counts 2 and is refused whole with 429 and Retry-After, where it
// counted as one request and ran. A batch over the cap is a JSON-RPC
// Invalid Request naming the cap; a batch within both is served.
func TestMCPBatchCountsEachCall(t *testing.T) {
	base := newAuthStack(t, server.WithMaxBatch(3)).serve(t)
	slow := mcpInit(t, base, slowKey)
	r := do(t, http.MethodPost, base+"/mcp", pings(2), slow...)
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("a batch of 2 on the slow key's last request: %d %s, want 429", r.status, r.body)
	}
	if e := checkErrorShape(t, r); e.Code != h4r.EEXHAUSTED || !strings.Contains(e.Message, "batch of 2") {
		t.Errorf("refusal %+v, want resource_exhausted naming the batch", e)
	}
	if r.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}

	healer := mcpInit(t, base, healerKey)
	cases := []struct {
		name   string
		batch  int
		status int
	}{
		{"within the cap", 3, http.StatusOK},
		{"over the cap", 4, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, base+"/mcp", pings(tc.batch), healer...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status == http.StatusOK {
				return
			}
			var e struct {
				JSONRPC string `json:"jsonrpc"`
				Error   struct {
					Code    int        `json:"code"`
					Message string     `json:"message"`
					Data    *h4r.Error `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil || e.JSONRPC != "2.0" || e.Error.Code != -32600 ||
				!strings.Contains(e.Error.Message, "at most 3") || e.Error.Data == nil || e.Error.Data.Code != h4r.EINVALID {
				t.Errorf("answer %s (%v), want a JSON-RPC Invalid Request naming the cap of 3", r.body, err)
			}
		})
	}
}

// TestWebSocketMessagesCounted: each message on GET /v1/subscribe counts
// against the key's limit (the slow key: 2 a minute). The third is
// answered with a resource_exhausted frame; a client that keeps sending
// over the limit is closed with 1008. Before, messages were never counted.
func TestWebSocketMessagesCounted(t *testing.T) {
	d := newAmbientStack(t)
	c, err := wsDial(t, d.base, "s-flood", slowKey)
	if err != nil {
		t.Fatal(err)
	}
	const msg = `{"type": "nothing"}` // each answered with an error frame, so each is seen
	for i, want := range []string{h4r.EINVALID, h4r.EINVALID, h4r.EEXHAUSTED} {
		wsSend(t, c, msg)
		m := next(t, c, 5*time.Second)
		e, _ := m["error"].(map[string]any)
		if m["type"] != "error" || e["code"] != want {
			t.Fatalf("message %d: %v, want an error frame %s", i+1, m, want)
		}
	}
	for range 20 {
		if err := c.c.Write(t.Context(), websocket.MessageText, []byte(msg)); err != nil {
			break // closed
		}
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-c.in:
			if ok {
				continue
			}
			if err := <-c.closed; websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Fatalf("closed with %v, want 1008", err)
			}
			return
		case <-deadline:
			t.Fatal("a client sending over its limit was not closed")
		}
	}
}

// dialFrom connects to addr from the loopback address local (127.0.0.2 is
// another host to the server, as any 127/8 address is on Linux).
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from %s: %v", local, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSlowlorisLeavesRoomForOthers: 12 clients of one address send their
// headers a line every 200 ms and never finish; the server caps
// connections at 8, and one address at 4. The slow clients over the
// address's cap are answered 503 with Retry-After, and a request from
// another address is served while the others hold their headers open.
// Without the per-address cap the slow clients filled the server's cap
// and the request was refused.
func TestSlowlorisLeavesRoomForOthers(t *testing.T) {
	base := newStack(t, server.WithMaxConnections(8), server.WithMaxConnectionsPerAddr(4)).serve(t)
	addr := strings.TrimPrefix(base, "http://")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	refused := make(chan string, 12)
	for range 12 {
		c := dialFrom(t, "127.0.0.1", addr)
		if _, err := io.WriteString(c, "GET /health/live HTTP/1.1\r\nHost: localhost\r\n"); err != nil {
			t.Fatal(err)
		}
		go func() { // drip a header line, as slowloris does
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-time.After(200 * time.Millisecond):
				}
				if _, err := fmt.Fprintf(c, "X-Slow-%d: 1\r\n", i); err != nil {
					return
				}
			}
		}()
		go func() { // a refused connection is answered at once
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				refused <- fmt.Sprintf("%d %s", res.StatusCode, res.Header.Get("Retry-After"))
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // every slow client connected and dripping

	c := dialFrom(t, "127.0.0.2", addr)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /health/live HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the legitimate request: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the legitimate request: %d, want 200 while slow clients hold their headers open", res.StatusCode)
	}
	for range 8 { // 12 slow clients, 4 allowed to one address
		select {
		case got := <-refused:
			if got != "503 1" {
				t.Errorf("a slow client over its address's cap: %q, want 503 with Retry-After 1", got)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("fewer than 8 slow clients over the address's cap were refused")
		}
	}
}

// TestUnauthenticatedBytesBounded: webhook bodies are read before their
// signature can be checked, so together they may hold at most the bound
// (256 KiB here). While one client holds 200 KiB of a body open, another
// unsigned 128 KiB body is refused 503 with Retry-After instead of being
// read; once the first is gone, the same body is read and refused for its
// signature (401). Before, every body up to 25 MB was read whatever the
// others held.
func TestUnauthenticatedBytesBounded(t *testing.T) {
	s := newTraceStack(t, webhookSecret, server.WithUnauthenticatedBytes(256<<10))
	addr := strings.TrimPrefix(s.base, "http://")
	// The holder sends 200 KiB of a 400 KiB body and stalls. A probe that
	// takes room while the holder is still being read can make the
	// holder's own wait run out (it is then refused and holds nothing), so
	// a refused holder is replaced until one holds its room.
	newHolder := func() net.Conn {
		h := dialFrom(t, "127.0.0.1", addr)
		fmt.Fprintf(h, "POST /webhook/github HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 400<<10)
		if _, err := h.Write(make([]byte, 200<<10)); err != nil {
			t.Fatal(err)
		}
		return h
	}
	refused := func(h net.Conn) bool { // the server answered the holder
		_ = h.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		var b [1]byte
		n, _ := h.Read(b[:])
		return n > 0
	}
	holder := newHolder()
	body := []byte(`{"pad":"` + strings.Repeat("x", 128<<10) + `"}`)
	var r response
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // let the server read what the holder sent
		r = s.webhook(t, "push", "d-bytes", body, "sha256=00")
		if r.status == http.StatusServiceUnavailable {
			break
		}
		if refused(holder) {
			holder.Close()
			holder = newHolder()
		}
	}
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("a body past the bound: %d %s, want 503", r.status, r.body)
	}
	if e := checkErrorShape(t, r); e.Code != h4r.EUNAVAILABLE || r.header.Get("Retry-After") == "" {
		t.Errorf("refusal %+v, Retry-After %q", e, r.header.Get("Retry-After"))
	}
	holder.Close()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		if r = s.webhook(t, "push", "d-bytes", body, "sha256=00"); r.status != http.StatusServiceUnavailable {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r.status != http.StatusUnauthorized {
		t.Errorf("once the holder left: %d %s, want 401 for the signature", r.status, r.body)
	}
}

// TestWebhookReplayNeverFillsTheWindow: over HTTP, a captured signed body
// replayed under 110 fresh delivery ids is applied once and answered 200
// each time; the repository's window stays open for a genuine delivery,
// and a delivery over a full window is answered 429 with Retry-After (the
// time until the window reopens: 60 s on the fixed clock).
func TestWebhookReplayNeverFillsTheWindow(t *testing.T) {
	s := newTraceStack(t, webhookSecret)
	landing := func(n int) []byte { return landingPush("acme/gateway", n) }
	captured := landing(0)
	for i := range 110 {
		if r := s.webhook(t, "push", fmt.Sprintf("replay-%d", i), captured, sign(webhookSecret, captured)); r.status != http.StatusOK {
			t.Fatalf("replay %d: %d %s", i, r.status, r.body)
		}
	}
	for i := 1; i < 100; i++ { // the window holds 100: the captured body's and these
		if r := s.webhook(t, "push", fmt.Sprintf("genuine-%d", i), landing(i), sign(webhookSecret, landing(i))); r.status != http.StatusOK {
			t.Fatalf("genuine delivery %d: %d %s", i, r.status, r.body)
		}
	}
	r := s.webhook(t, "push", "over", landing(100), sign(webhookSecret, landing(100)))
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("the 101st delivery: %d %s, want 429", r.status, r.body)
	}
	if got := r.header.Get("Retry-After"); got != "60" {
		t.Errorf("Retry-After %q, want 60", got)
	}
}
