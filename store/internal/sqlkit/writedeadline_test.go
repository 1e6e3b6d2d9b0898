package sqlkit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// finish decides from the contexts and the write's own deadline: each
// case ends the write in a different way and checks the code the caller
// gets.
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
			if tt.wantBusy && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("finish(%v) = %v: does not say a deadline ended the write", tt.err, err)
			}
		})
	}
}

// ownDeadlineEnded: the write's own deadline ended it when its context
// expired, or when the clock passed the deadline before the context's
// timer fired; never when the caller's context ended or had the earlier
// deadline.
func TestOwnDeadlineEnded(t *testing.T) {
	base := time.Now()
	own := base.Add(time.Hour)
	expired, cancel := context.WithDeadline(context.Background(), base.Add(-time.Second))
	defer cancel()
	live, cancelLive := context.WithDeadline(context.Background(), own)
	defer cancelLive()
	ended, end := context.WithCancel(context.Background())
	end()
	earlier, cancelEarlier := context.WithDeadline(context.Background(), own.Add(-time.Minute))
	defer cancelEarlier()
	tests := []struct {
		name      string
		now       time.Time
		wctx, ctx context.Context
		want      bool
	}{
		{"its context expired", base, expired, context.Background(), true},
		{"the clock passed it before the timer fired", own.Add(time.Millisecond), live, context.Background(), true},
		{"the clock at it exactly", own, live, context.Background(), true},
		{"before it", own.Add(-time.Millisecond), live, context.Background(), false},
		{"the caller's context ended", own.Add(time.Millisecond), live, ended, false},
		{"the caller's deadline came first", own.Add(time.Millisecond), live, earlier, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownDeadlineEnded(tt.now, own, tt.wctx, tt.ctx); got != tt.want {
				t.Fatalf("ownDeadlineEnded = %v, want %v", got, tt.want)
			}
		})
	}
}
