package sqlkit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"testing"
	"time"
)

// TestFailedFlushLosesNothing: a batch whose write fails goes back to
// pending, merged with what was recorded meanwhile, and the next flush
// writes the sum; Stop writes what is left and ignores later records.
func TestFailedFlushLosesNothing(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	now := t0
	var written []map[string]AccessPending
	fail := true
	var tr *AccessTracker
	flush := func(_ context.Context, batch map[string]AccessPending) error {
		if fail {
			fail = false
			tr.Record([]string{"b"}) // recorded while the failing write runs
			return errors.New("disk full")
		}
		written = append(written, maps.Clone(batch))
		return nil
	}
	tr = StartAccessTracker(flush, time.Hour, time.Second, func() time.Time { return now }, slog.New(slog.NewTextHandler(io.Discard, nil)))

	tr.Record([]string{"a", "a", "b"})
	if err := tr.flushPending(); err == nil {
		t.Fatal("the failing flush reported no error")
	}
	now = t0.Add(time.Minute)
	tr.Record([]string{"a"})
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	tr.Record([]string{"a"}) // after Stop: ignored

	want := map[string]AccessPending{"a": {Count: 3, Last: t0.Add(time.Minute)}, "b": {Count: 2, Last: t0}}
	if len(written) != 1 || !maps.Equal(written[0], want) {
		t.Errorf("written %v, want one batch %v", written, want)
	}
}
