package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/tokens"
)

// TestSnapshotSharesOneTransaction: reads under a snapshot see the file as
// it was at the snapshot's first read, written to since or not, and need
// no connection of their own; a snapshot inside one is the same one, and
// its release leaves the outer one open; after release, reads under it
// fail rather than read a later state.
func TestSnapshotSharesOneTransaction(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "h4r.db"), tokens.CL100K)
	defer s.Close()
	item := func(id string) h4r.Item {
		return h4r.Item{ID: id, Kind: "note", Text: "the login selector moved to sign-in"}
	}
	if _, err := s.Upsert(ctx, []h4r.Item{item("before")}); err != nil {
		t.Fatal(err)
	}

	sctx, release, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := s.Get(sctx, "before"); err != nil { // the snapshot's first read
		t.Fatal(err)
	}
	if _, err := s.Upsert(ctx, []h4r.Item{item("after")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "after"); err != nil {
		t.Fatalf("a read of its own does not see the write: %v", err)
	}
	if _, err := s.Get(sctx, "after"); h4r.ErrorCode(err) != h4r.ENOTFOUND {
		t.Fatalf("a read under the snapshot saw a later write: %v", err)
	}
	hits, err := s.FullText().Generate(sctx, h4r.CandidateQuery{Text: "login selector"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Item.ID == "after" {
			t.Fatal("a search under the snapshot found the item written after it")
		}
	}

	inner, releaseInner, err := s.Snapshot(sctx)
	if err != nil {
		t.Fatal(err)
	}
	releaseInner()
	if _, err := s.Get(inner, "before"); err != nil {
		t.Fatalf("the inner snapshot's release ended the outer one: %v", err)
	}

	// Every other connection of the pool held: the snapshot's reads still
	// run, on its own; a read of its own waits for one.
	var held []func()
	for {
		c, r, err := s.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
		waitCtx, cancel := context.WithTimeout(c, 50*time.Millisecond)
		_, err = s.Get(waitCtx, "before") // begins the held snapshot's read
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(held) == 8 {
			t.Fatal("8 snapshots held and still a connection free: the pool has no bound")
		}
		probe, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err = s.Get(probe, "before")
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break // the pool is spent
		}
	}
	if _, err := s.Get(sctx, "before"); err != nil {
		t.Fatalf("a read under the snapshot needed another connection: %v", err)
	}
	for _, r := range held {
		r()
	}

	release()
	release() // again: nothing more to end
	if _, err := s.Get(sctx, "before"); err == nil {
		t.Fatal("a read under a released snapshot succeeded")
	}
}
