package server_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/server"
)

// With every pack slot taken, a context request that sends
// "Prefer: busy=503" gets 503 unavailable with Retry-After (over HTTP, on
// both the pack route and A2A); without it, or with another preference,
// the default empty degraded pack (200) is kept. An A2A task made while
// busy fails, saying so. The slots held are the engine's: the one
// admission point every caller waits at.
func TestBusyServerAnswers503WhenPreferred(t *testing.T) {
	s := newStack(t, server.WithRequestTimeout(200*time.Millisecond))
	base := s.serve(t)
	release := s.srv.HoldSlots()
	defer release()
	for _, tc := range []struct {
		name   string
		prefer string
		want   int
	}{
		{"no_preference", "", http.StatusOK},
		{"busy_503", "busy=503", http.StatusServiceUnavailable},
		{"quoted_among_others", `respond-async, BUSY="503"; x=1`, http.StatusServiceUnavailable},
		{"other_value", "busy=200", http.StatusOK},
		{"other_preference", "return=minimal", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var header []string
			if tc.prefer != "" {
				header = []string{"Prefer", tc.prefer}
			}
			r := post(t, base+"/v1/context-pack", healerBody, header...)
			if r.status != tc.want {
				t.Fatalf("status %d, want %d: %s", r.status, tc.want, r.body)
			}
			if tc.want == http.StatusOK {
				if p := decodePack(t, r); p.Status != h4r.StatusDegraded || len(p.Results) != 0 {
					t.Errorf("pack status %q with %d results, want the empty degraded pack", p.Status, len(p.Results))
				}
				if r.header.Get("Preference-Applied") != "" {
					t.Errorf("Preference-Applied %q on a pack answer", r.header.Get("Preference-Applied"))
				}
				return
			}
			if e := checkErrorShape(t, r); e.Code != h4r.EUNAVAILABLE {
				t.Errorf("error code %q, want %q", e.Code, h4r.EUNAVAILABLE)
			}
			if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs < 1 {
				t.Errorf("Retry-After %q, want a positive number of seconds", r.header.Get("Retry-After"))
			}
			if got := r.header.Get("Preference-Applied"); got != "busy=503" {
				t.Errorf("Preference-Applied %q, want busy=503", got)
			}
		})
	}
	t.Run("a2a_task_fails", func(t *testing.T) {
		a := rpc(t, base, "", "", "message/send", map[string]any{"message": map[string]any{
			"kind": "message", "messageId": "m-busy", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "login"}}}})
		var task struct {
			Status struct {
				State   string `json:"state"`
				Message struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"message"`
			} `json:"status"`
		}
		if a.Error != nil {
			t.Fatalf("message/send while busy: %+v", a.Error)
		}
		if err := json.Unmarshal(a.Result, &task); err != nil {
			t.Fatal(err)
		}
		if parts := task.Status.Message.Parts; task.Status.State != "failed" || len(parts) != 1 || !strings.Contains(parts[0].Text, "busy") {
			t.Errorf("task while busy: %s; want a failed task saying the server is busy", a.Result)
		}
	})
	t.Run("a2a", func(t *testing.T) {
		r := post(t, base+"/v1/a2a", `{"meta": {"id": "msg-busy", "type": "ContextRequest"}, "payload": {"query": {"text": "login"}}}`, "Prefer", "busy=503")
		env := decodeEnvelope(t, r)
		if r.status != http.StatusServiceUnavailable || env.Meta.Type != h4r.TypeContextError || r.header.Get("Retry-After") == "" {
			t.Errorf("status %d type %s Retry-After %q, want 503, a ContextError and Retry-After", r.status, env.Meta.Type, r.header.Get("Retry-After"))
		}
	})
}
