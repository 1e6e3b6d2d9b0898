package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// retryPolicy says how reads are retried after transient failures.
type retryPolicy struct {
	attempts int           // retries after the first try
	backoff  time.Duration // before the first retry; doubled each time
}

// read runs fn, and again after a backoff when it fails for a transient
// reason, as long as ctx allows. fn must be safe to repeat: only reads go
// through here. Writes are not retried, because a lost connection may have
// committed them.
func (s *Store) read(ctx context.Context, fn func(ctx context.Context) error) error {
	wait := s.retry.backoff
	for attempt := 0; ; attempt++ {
		err := fn(ctx)
		if err != nil && ctx.Err() != nil {
			// Postgres reports a cancelled statement as its own error
			// (57014); say why it was cancelled, so that callers see
			// the deadline.
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		if err == nil || attempt >= s.retry.attempts || !transient(err) {
			return err
		}
		s.log.WarnContext(ctx, "transient Postgres error; retrying the read", "attempt", attempt+1, "backoff", wait, "err", err)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// loadUntilDone runs load until it succeeds (true) or ctx ends (false),
// logging each failure and waiting retry before the next attempt: the
// first load of a structure kept in memory (the link graph, the vector
// index), which a server starts in the background and must not give up.
func (s *Store) loadUntilDone(ctx context.Context, what string, retry time.Duration, load func(context.Context) error) bool {
	for {
		err := load(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		s.log.WarnContext(ctx, "loading "+what+" failed; retrying", "error", err, "retry_in", retry)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(retry):
		}
	}
}

// transient reports whether err may go away by itself: the connection was
// lost or refused, the server is starting or shutting down, too many
// connections, or the transaction lost a serialization race. A cancelled
// or late context is not transient: the caller gave up.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "40001", "40P01", // serialization_failure, deadlock_detected
			"57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
			"53300": // too_many_connections
			return true
		}
		return len(pg.Code) == 5 && pg.Code[:2] == "08" // connection_exception
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}
