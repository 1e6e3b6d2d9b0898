package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// EmbedderModel returns the model of the kind of built-in embedder that
// PutEmbedderModel saved last, with its name; a nil model when none was.
func (s *Store) EmbedderModel(ctx context.Context, kind string) (name string, model []byte, err error) {
	err = s.read(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT name, data FROM embedder_models WHERE kind = $1`, kind).Scan(&name, &model)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("reading the %s embedder's model: %w", kind, err)
	}
	return name, model, nil
}

// EmbedderModelName returns the name of the model of kind that
// PutEmbedderModel saved last, "" when none was: what a replica polls to
// notice a model another one learned, without reading the model.
func (s *Store) EmbedderModelName(ctx context.Context, kind string) (name string, err error) {
	err = s.read(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT name FROM embedder_models WHERE kind = $1`, kind).Scan(&name)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the name of the %s embedder's model: %w", kind, err)
	}
	return name, nil
}

// PutEmbedderModel saves what a built-in embedder of kind learned,
// replacing its previous model, for every replica to load. It is
// maintenance (learning runs at start and on h4r reindex), bounded by ctx
// only.
func (s *Store) PutEmbedderModel(ctx context.Context, kind, name string, model []byte) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO embedder_models (kind, name, data, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (kind) DO UPDATE SET name = excluded.name, data = excluded.data, updated_at = excluded.updated_at`,
		kind, name, model, s.now().UTC())
	if err != nil {
		return fmt.Errorf("saving the %s embedder's model: %w", kind, err)
	}
	return nil
}

// learnLockSQL and learnTryLockSQL take the session advisory lock that lets
// one process at a time learn a built-in embedder's model over this
// schema. It is keyed by the schema, as the statistics and vector locks
// are, so that tenants learn independently.
const (
	learnLockSQL    = `SELECT pg_advisory_lock(hashtextextended(current_schema(), 7154))`
	learnTryLockSQL = `SELECT pg_try_advisory_lock(hashtextextended(current_schema(), 7154))`
	learnUnlockSQL  = `SELECT pg_advisory_unlock(hashtextextended(current_schema(), 7154))`
)

// LockLearning takes the lock that lets one replica at a time learn the
// embedder's model: learning reads every item and re-embeds them all, and
// two replicas doing it at once would each re-embed the corpus with a model
// the other then replaces. With wait it waits for the replica holding it;
// without, ok is false when another holds it. The lock is a session lock
// on a connection kept out of the pool until unlock, so it ends with the
// process if the process dies.
func (s *Store) LockLearning(ctx context.Context, wait bool) (unlock func(), ok bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("acquiring a connection for the learning lock: %w", err)
	}
	if wait {
		_, err = conn.Exec(ctx, learnLockSQL)
		ok = err == nil
	} else {
		err = conn.QueryRow(ctx, learnTryLockSQL).Scan(&ok)
	}
	if err != nil || !ok {
		conn.Release()
		if err != nil {
			return nil, false, fmt.Errorf("taking the learning lock: %w", err)
		}
		return nil, false, nil
	}
	return func() {
		// A lock that cannot be released is dropped with its session.
		if _, err := conn.Exec(context.Background(), learnUnlockSQL); err != nil {
			_ = conn.Conn().Close(context.Background())
		}
		conn.Release()
	}, true, nil
}
