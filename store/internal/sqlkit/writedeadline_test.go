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

// busyErr stands for the SQLite driver's error: Code is the result code,
// extended codes in the high bits.
type busyErr int

func (e busyErr) Error() string { return fmt.Sprintf("database is locked (%d)", int(e)) }
func (e busyErr) Code() int     { return int(e) }

// TestBusyAfterTheDeadlineIsUnavailable: SQLITE_BUSY that ends a write
// after its deadline passed is the store being busy (503), as the
// deadline's own cancellation is; before the deadline, or another code,
// it is the error it is.
func TestBusyAfterTheDeadlineIsUnavailable(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		expire   bool
		wantBusy bool
	}{
		{"busy after the deadline", busyErr(5), true, true},
		{"extended busy code after the deadline", busyErr(5 | 2<<8), true, true},
		{"busy before the deadline", busyErr(5), false, false},
		{"another code after the deadline", busyErr(19), true, false},
		{"a plain error after the deadline", errors.New("constraint failed"), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := time.Hour
			if tt.expire {
				d = time.Millisecond
			}
			ctx, finish := WriteWithin(context.Background(), d)
			if tt.expire {
				<-ctx.Done()
			}
			err := finish(tt.err)
			var e *h4r.Error
			got := errors.As(err, &e) && e.Code == h4r.EUNAVAILABLE
			if got != tt.wantBusy {
				t.Errorf("finish(%v) = %v; unavailable %v, want %v", tt.err, err, got, tt.wantBusy)
			}
		})
	}
}
