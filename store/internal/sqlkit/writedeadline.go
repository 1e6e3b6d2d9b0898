package sqlkit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/h4r/h4r"
)

// WriteWithin returns ctx bounded by d (not bounded when d <= 0) and finish,
// which releases the deadline's timer and returns the write's error: as an
// unavailable *h4r.Error, wrapping err, when d ended the write rather than
// the caller's own context. Call finish exactly once, with the write's
// result, after the write has rolled back or committed.
func WriteWithin(ctx context.Context, d time.Duration) (context.Context, func(error) error) {
	if d <= 0 {
		return ctx, func(err error) error { return err }
	}
	own := time.Now().Add(d)
	wctx, cancel := context.WithDeadline(ctx, own)
	return wctx, func(err error) error {
		expired := ownDeadlineEnded(time.Now(), own, wctx, ctx)
		cancel()
		if err == nil || !expired || !(errors.Is(err, context.DeadlineExceeded) || lockBusy(err)) {
			return err
		}
		if !errors.Is(err, context.DeadlineExceeded) { // SQLITE_BUSY seen before the cancellation
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return fmt.Errorf("%w: %w", WriteBusy(d), err)
	}
}

// ownDeadlineEnded reports whether, at now, the write's own deadline own
// has ended it rather than the caller's context: wctx expired, or the
// clock passed own before its timer fired (the writer's busy timeout
// equals the deadline, so SQLite may give up waiting for a lock a moment
// before the cancellation is seen), while the caller's context has not
// ended and has no deadline of its own at or before own.
func ownDeadlineEnded(now, own time.Time, wctx, ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && !dl.After(own) {
		return false
	}
	return errors.Is(wctx.Err(), context.DeadlineExceeded) || !now.Before(own)
}

// lockBusy reports whether err is SQLite's SQLITE_BUSY (code 5): the
// writer's busy timeout, which equals the write's deadline, can end the
// wait for another process's lock a moment before the deadline's own
// cancellation does (ownDeadlineEnded). The driver's error is matched by its Code method,
// so that this package needs no SQLite import.
func lockBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5
}

// WriteBusy is the error of a write that its deadline d ended.
func WriteBusy(d time.Duration) *h4r.Error {
	return h4r.Errorf(h4r.EUNAVAILABLE, "", "the store is busy with other writes: this write did not finish within its deadline (%s, H4R_WRITE_TIMEOUT) and was rolled back, nothing of it was written; retry after a pause", d)
}
