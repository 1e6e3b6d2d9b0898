package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// EmbedderModel returns the model of the kind of built-in embedder that
// PutEmbedderModel saved last, with its name; a nil model when none was.
func (s *Store) EmbedderModel(ctx context.Context, kind string) (name string, model []byte, err error) {
	err = s.readers.QueryRowContext(ctx, `SELECT name, data FROM embedder_models WHERE kind = ?`, kind).Scan(&name, &model)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("reading the %s embedder's model: %w", kind, err)
	}
	return name, model, nil
}

// EmbedderModelName returns the name of the model of kind that
// PutEmbedderModel saved last, "" when none was: what a server polls to
// notice a model another process (h4r reindex) learned, without reading
// the model.
func (s *Store) EmbedderModelName(ctx context.Context, kind string) (name string, err error) {
	err = s.readers.QueryRowContext(ctx, `SELECT name FROM embedder_models WHERE kind = ?`, kind).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the name of the %s embedder's model: %w", kind, err)
	}
	return name, nil
}

// PutEmbedderModel saves what a built-in embedder of kind learned,
// replacing its previous model. It is maintenance (learning runs at start
// and on h4r reindex), bounded by ctx only.
func (s *Store) PutEmbedderModel(ctx context.Context, kind, name string, model []byte) error {
	err := s.runTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO embedder_models (kind, name, data, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (kind) DO UPDATE SET name = excluded.name, data = excluded.data, updated_at = excluded.updated_at`,
			kind, name, model, s.now().UTC().Format(time.RFC3339Nano))
		return err
	})
	if err != nil {
		return fmt.Errorf("saving the %s embedder's model: %w", kind, err)
	}
	return nil
}
