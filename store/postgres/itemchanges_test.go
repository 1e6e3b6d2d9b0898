package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// The log of item changes names, to a reader on another replica, every
// item of the kinds it follows that was inserted, written at a new
// version, linked, changed kind (under both kinds) or deleted since its
// mark, and nothing for writes that leave the version as it was (access
// counts); past a pruned log it says to reload. ItemVersions reads the
// versions of the items that exist.
func TestItemChangesAcrossReplicas(t *testing.T) {
	dsn := newSchema(t)
	a, b := openAt(t, dsn), openAt(t, dsn)
	mark, err := b.ItemChangeMark(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	trajectory := []string{"trajectory"}
	steps := []struct {
		name  string
		write func(t *testing.T)
		kinds []string
		want  []string
	}{
		{"insert", func(t *testing.T) {
			if _, err := a.Upsert(t.Context(), []h4r.Item{{ID: "t1", Kind: "trajectory", Text: "one"}, {ID: "n1", Kind: "note", Text: "note"}}); err != nil {
				t.Fatal(err)
			}
		}, trajectory, []string{"t1"}},
		{"every kind", func(t *testing.T) {
			if _, err := a.Upsert(t.Context(), []h4r.Item{{ID: "n2", Kind: "note", Text: "another"}}); err != nil {
				t.Fatal(err)
			}
		}, nil, []string{"n2"}},
		{"a new version", func(t *testing.T) {
			if _, err := a.Upsert(t.Context(), []h4r.Item{{ID: "t1", Kind: "trajectory", Text: "one, restricted",
				Metadata: h4r.Metadata{RestrictedToGroups: []string{"ops"}}}}); err != nil {
				t.Fatal(err)
			}
		}, trajectory, []string{"t1"}},
		{"access counts log nothing", func(t *testing.T) {
			if err := a.flushAccess(t.Context(), map[string]sqlkit.AccessPending{"t1": {Count: 2, Last: time.Now()}}); err != nil {
				t.Fatal(err)
			}
		}, nil, []string{}},
		{"a link", func(t *testing.T) {
			if _, err := a.AddLink(t.Context(), "t1", h4r.Link{Type: "related", Target: "n1"}); err != nil {
				t.Fatal(err)
			}
		}, trajectory, []string{"t1"}},
		{"a note becomes a trajectory", func(t *testing.T) {
			if _, err := a.Upsert(t.Context(), []h4r.Item{{ID: "n1", Kind: "trajectory", Text: "now a trajectory"}}); err != nil {
				t.Fatal(err)
			}
		}, trajectory, []string{"n1"}},
		{"a trajectory becomes a note", func(t *testing.T) {
			if _, err := a.Upsert(t.Context(), []h4r.Item{{ID: "n1", Kind: "note", Text: "a note again"}}); err != nil {
				t.Fatal(err)
			}
		}, trajectory, []string{"n1"}},
		{"delete", func(t *testing.T) {
			if err := a.Delete(t.Context(), "t1"); err != nil {
				t.Fatal(err)
			}
		}, trajectory, []string{"t1"}},
	}
	for _, s := range steps {
		s.write(t)
		ids, next, reload, err := b.ItemChangesSince(t.Context(), mark, s.kinds)
		if err != nil || reload {
			t.Fatalf("%s: reload %v, error %v", s.name, reload, err)
		}
		slices.Sort(ids)
		if !slices.Equal(append([]string{}, ids...), s.want) {
			t.Fatalf("%s: changed %v, want %v", s.name, ids, s.want)
		}
		if len(s.want) > 0 && next <= mark {
			t.Fatalf("%s: the mark stays at %d", s.name, next)
		}
		mark = next
	}
	versions, err := b.ItemVersions(t.Context(), []string{"t1", "n1", "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := versions["t1"]; ok || versions["n1"] != 3 || versions["n2"] != 1 {
		t.Errorf("versions %v, want n1 at 3, n2 at 1 and no t1", versions)
	}
	if err := a.pruneItemChanges(t.Context(), -time.Hour); err != nil { // everything, however recent
		t.Fatal(err)
	}
	if _, _, reload, err := b.ItemChangesSince(t.Context(), 0, nil); err != nil || !reload {
		t.Fatalf("behind the pruned log: reload %v, error %v; want a reload", reload, err)
	}
	if ids, _, reload, err := b.ItemChangesSince(t.Context(), mark, nil); err != nil || reload || len(ids) != 0 {
		t.Fatalf("at the pruned mark: %v, reload %v, error %v; want nothing", ids, reload, err)
	}
}

// A store listening for item changes is signalled when another replica's
// write commits, and not for a write in another schema.
func TestListenItemChanges(t *testing.T) {
	dsn := newSchema(t)
	a, b := openAt(t, dsn), openAt(t, dsn)
	other := newStore(t)
	signals := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.ListenItemChanges(ctx, func() { signals <- struct{}{} }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ListenItemChanges: %v", err)
		}
	}()
	wait := func(what string) {
		t.Helper()
		select {
		case <-signals:
		case <-time.After(10 * time.Second):
			t.Fatalf("no signal %s", what)
		}
	}
	wait("on connecting")
	if _, err := other.Upsert(t.Context(), []h4r.Item{{ID: "x", Kind: "note", Text: "elsewhere"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Upsert(t.Context(), []h4r.Item{{ID: "t1", Kind: "trajectory", Text: "one"}}); err != nil {
		t.Fatal(err)
	}
	wait("after a write")
	select {
	case <-signals:
		t.Fatal("a second signal: the other schema's write, or one write signalled twice")
	case <-time.After(100 * time.Millisecond):
	}
}
