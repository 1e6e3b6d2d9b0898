package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// SavePack stores a delivered pack and prunes the oldest packs past keep
// (the retention limit; keep <= 0 keeps every pack), in one transaction.
// Saving a pack whose id exists already does nothing: the id is a hash of
// everything the pack is.
func (s *Store) SavePack(ctx context.Context, p h4r.StoredPack, keep int) error {
	ids, err := json.Marshal(sqlkit.PackIDs(p.ResultIDs))
	if err != nil {
		return fmt.Errorf("encoding the result ids of pack %s: %w", p.ID, err)
	}
	return s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO packs (id, principal_id, query, request, result_ids, policy_revision, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			p.ID, p.PrincipalID, p.Query, sqlkit.PackRequest(p), string(ids), p.PolicyRevision, formatTime(p.CreatedAt)); err != nil {
			return fmt.Errorf("saving pack %s: %w", p.ID, err)
		}
		if keep <= 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM packs WHERE seq <= (SELECT max(seq) FROM packs) - ?`, keep); err != nil {
			return fmt.Errorf("pruning packs past the retention limit (%d): %w", keep, err)
		}
		return nil
	})
}

// Pack returns the stored pack with the given id, or a not_found
// *h4r.Error naming context_pack_id.
func (s *Store) Pack(ctx context.Context, id string) (*h4r.StoredPack, error) {
	var p h4r.StoredPack
	var req, ids, created string
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT id, principal_id, query, request, result_ids, policy_revision, created_at FROM packs WHERE id = ?`, id).
			Scan(&p.ID, &p.PrincipalID, &p.Query, &req, &ids, &p.PolicyRevision, &created)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlkit.PackNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading pack %q: %w", id, err)
	}
	p.Request = []byte(req)
	if err := json.Unmarshal([]byte(ids), &p.ResultIDs); err != nil {
		return nil, fmt.Errorf("decoding the result ids of pack %q: %w", id, err)
	}
	if p.CreatedAt, err = parseTime(created); err != nil {
		return nil, fmt.Errorf("decoding the time of pack %q: %w", id, err)
	}
	return &p, nil
}

// AddFeedback stores a verdict on a pack.
func (s *Store) AddFeedback(ctx context.Context, f h4r.Feedback) error {
	ids, err := json.Marshal(sqlkit.PackIDs(f.ResultIDs))
	if err != nil {
		return fmt.Errorf("encoding the result ids of feedback on %s: %w", f.PackID, err)
	}
	return s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO pack_feedback (pack_id, principal_id, verdict, notes, query, result_ids, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			f.PackID, f.PrincipalID, f.Verdict, f.Notes, f.Query, string(ids), formatTime(f.CreatedAt)); err != nil {
			return fmt.Errorf("saving feedback on pack %s: %w", f.PackID, err)
		}
		return nil
	})
}

// EachFeedback visits every stored verdict, oldest first.
func (s *Store) EachFeedback(ctx context.Context, fn func(h4r.Feedback) error) error {
	all, err := s.feedback(ctx, "")
	if err != nil {
		return fmt.Errorf("reading feedback: %w", err)
	}
	return sqlkit.VisitFeedback(all, fn)
}

// feedback reads the stored verdicts, oldest first: on one pack, or on
// every pack when packID is empty.
func (s *Store) feedback(ctx context.Context, packID string) ([]h4r.Feedback, error) {
	query, args := `SELECT pack_id, principal_id, verdict, notes, query, result_ids, created_at FROM pack_feedback ORDER BY seq`, []any(nil)
	if packID != "" {
		query, args = `SELECT pack_id, principal_id, verdict, notes, query, result_ids, created_at FROM pack_feedback WHERE pack_id = ? ORDER BY seq`, []any{packID}
	}
	var out []h4r.Feedback
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var f h4r.Feedback
			var ids, created string
			if err := rows.Scan(&f.PackID, &f.PrincipalID, &f.Verdict, &f.Notes, &f.Query, &ids, &created); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(ids), &f.ResultIDs); err != nil {
				return fmt.Errorf("decoding the result ids of feedback on %s: %w", f.PackID, err)
			}
			if f.CreatedAt, err = parseTime(created); err != nil {
				return fmt.Errorf("decoding the time of feedback on %s: %w", f.PackID, err)
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	return out, err
}

// PacksOf returns the packs delivered to principal, newest first: at most
// limit of them from offset, and how many there are.
func (s *Store) PacksOf(ctx context.Context, principal string, limit, offset int) ([]h4r.StoredPack, int, error) {
	var out []h4r.StoredPack
	var total int
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM packs WHERE principal_id = ?`, principal).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, principal_id, query, request, result_ids, policy_revision, created_at FROM packs
			WHERE principal_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?`, principal, limit, offset)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p h4r.StoredPack
			var req, ids, created string
			if err := rows.Scan(&p.ID, &p.PrincipalID, &p.Query, &req, &ids, &p.PolicyRevision, &created); err != nil {
				return err
			}
			p.Request = []byte(req)
			if err := json.Unmarshal([]byte(ids), &p.ResultIDs); err != nil {
				return fmt.Errorf("decoding the result ids of pack %q: %w", p.ID, err)
			}
			if p.CreatedAt, err = parseTime(created); err != nil {
				return fmt.Errorf("decoding the time of pack %q: %w", p.ID, err)
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("listing the packs of %q: %w", principal, err)
	}
	return out, total, nil
}

// FeedbackOn returns the verdicts on one pack, oldest first.
func (s *Store) FeedbackOn(ctx context.Context, packID string) ([]h4r.Feedback, error) {
	out, err := s.feedback(ctx, packID)
	if err != nil {
		return nil, fmt.Errorf("reading the feedback on pack %s: %w", packID, err)
	}
	return out, nil
}
