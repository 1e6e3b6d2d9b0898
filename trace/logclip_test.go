package trace_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r/internal/syncbuf"

	"github.com/h4r/h4r/trace"
)

// TestConsumerLogsBoundedQuotes: a message whose unknown key is 20 KB is
// acknowledged and logged, and the log line quotes at most a few hundred
// bytes of it (the key was logged whole twice, as the field and in the
// error: a 40 KB line).
func TestConsumerLogsBoundedQuotes(t *testing.T) {
	n := newNATS(t)
	h := newHarness(t)
	var logs syncbuf.Buffer
	n.start(t, h.svc, trace.WithConsumerLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	n.publish(t, []byte(`{"`+strings.Repeat("k", 20000)+`": 1}`), nil)
	n.settled(t)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "cannot be stored") {
		if time.Now().After(deadline) {
			t.Fatalf("the rejected message was not logged: %s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if len(line) > 2000 {
			t.Errorf("a log line of %d bytes: %.300s…", len(line), line)
		}
	}
}
