package sqlkit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// finish decides from the contexts, not the clock: each case ends the
// write in a different way and checks the code the caller gets.
func TestFinish(t *testing.T) {
	tests := []struct {
		name     string
		d        time.Duration
		write    func(ctx context.Context) error // runs under the deadline
		cancel   bool                            // the caller cancels its own context first
		wantCode string                          // "" for no error
	}{
		{"write succeeds", time.Minute, func(context.Context) error { return nil }, false, ""},
		{"write fails for its own reason", time.Minute, func(context.Context) error { return errors.New("disk full") }, false, h4r.EINTERNAL},
		{"deadline ends a waiting write", time.Millisecond, func(ctx context.Context) error {
			<-ctx.Done()
			return fmt.Errorf("waiting for the lock: %w", ctx.Err())
		}, false, h4r.EUNAVAILABLE},
		{"invalid input stays invalid past the deadline", time.Millisecond, func(ctx context.Context) error {
			<-ctx.Done()
			return h4r.Errorf(h4r.EINVALID, "items[0].id", "bad")
		}, false, h4r.EINVALID},
		{"caller cancels: not the store's deadline", time.Minute, func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}, true, h4r.EINTERNAL},
		{"no deadline: a write may wait as long as its caller", 0, func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); ok {
				return errors.New("a deadline was set")
			}
			return nil
		}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			wctx, finish := WriteWithin(ctx, tt.d)
			err := finish(tt.write(wctx))
			if got := h4r.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("code %q (error %v), want %q", got, err, tt.wantCode)
			}
			if tt.wantCode == h4r.EUNAVAILABLE && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the busy error %v does not wrap the cause", err)
			}
		})
	}
}
