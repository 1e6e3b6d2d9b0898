package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// counting is a Decider that counts the items it is asked about and can be
// made to fail.
type counting struct {
	Decider
	calls atomic.Int64
	fail  atomic.Bool
	rev   atomic.Pointer[string]
}

func (c *counting) Revision() string {
	if r := c.rev.Load(); r != nil {
		return *r
	}
	return c.Decider.Revision()
}

func (c *counting) DecideBatch(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []h4r.DecisionResult {
	c.calls.Add(int64(len(items)))
	if c.fail.Load() {
		out := make([]h4r.DecisionResult, len(items))
		for i := range out {
			out[i].Err = errors.New("policy down")
		}
		return out
	}
	return c.Decider.DecideBatch(ctx, spec, items)
}

func (c *counting) Decide(ctx context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, error) {
	r := c.DecideBatch(ctx, spec, []*h4r.Item{item})
	return r[0].Decision, r[0].Err
}

func versioned(n int) []*h4r.Item {
	items := benchItems(n)
	for _, it := range items {
		it.Metadata.Version = 1
	}
	return items
}

func TestCache(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	inner := &counting{Decider: engine}
	cache := NewCache(100, time.Hour)
	cached := cache.Wrap(inner)
	who := spec(h4r.Internal, "qa")
	items := versioned(10)

	first := cached.DecideBatch(t.Context(), who, items)
	second := cached.DecideBatch(t.Context(), who, items)
	if got := inner.calls.Load(); got != 10 {
		t.Fatalf("policy asked about %d items for two identical batches, want 10", got)
	}
	for i := range items {
		if first[i].Err != nil || !equalDecision(first[i].Decision, second[i].Decision) {
			t.Fatalf("item %d: cached %+v, first %+v", i, second[i], first[i])
		}
	}
	if st := cache.Stats(); st.Hits != 10 || st.Misses != 10 {
		t.Errorf("stats = %+v, want 10 hits and 10 misses", st)
	}

	steps := []struct {
		name      string
		change    func()
		wantCalls int64
	}{
		{"another specialist misses", func() { who = spec(h4r.Internal, "qa", "ops") }, 10},
		{"the same specialist hits", func() {}, 0},
		{"a new item version misses", func() { items[0].Metadata.Version = 2 }, 1},
		{"a new policy revision misses", func() { r := "other"; inner.rev.Store(&r) }, 10},
		{"items without a version are never cached", func() {
			for _, it := range items {
				it.Metadata.Version = 0
			}
		}, 10},
		{"...and asked again", func() {}, 10},
	}
	for _, st := range steps {
		before := inner.calls.Load()
		st.change()
		cached.DecideBatch(t.Context(), who, items)
		if got := inner.calls.Load() - before; got != st.wantCalls {
			t.Errorf("%s: policy asked about %d items, want %d", st.name, got, st.wantCalls)
		}
	}
}

// TestCachedBatchEqualsPolicy: a batch answered partly from the cache
// (every third item decided before) gives each item the policy's own
// decision for it, in place.
func TestCachedBatchEqualsPolicy(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cached := NewCache(100, time.Hour).Wrap(engine)
	who := spec(h4r.Internal, "qa")
	items := versioned(30)
	var earlier []*h4r.Item
	for i := 1; i < len(items); i += 3 {
		earlier = append(earlier, items[i])
	}
	cached.DecideBatch(t.Context(), who, earlier)
	got, want := cached.DecideBatch(t.Context(), who, items), engine.DecideBatch(t.Context(), who, items)
	kinds := map[string]bool{}
	for i := range items {
		if got[i].Err != nil || want[i].Err != nil || !equalDecision(got[i].Decision, want[i].Decision) {
			t.Fatalf("item %d: cached batch %+v, policy %+v", i, got[i], want[i])
		}
		kinds[fmt.Sprintf("%+v", want[i].Decision)] = true
	}
	if len(kinds) < 3 {
		t.Fatalf("only %d kinds of decision: the test cannot tell items apart", len(kinds))
	}
}

// TestCacheNeverReusesScopes: the numbers standing for a revision and a
// specialist are forgotten past maxScopes, never reused: a specialist
// first seen after that is asked about, not answered with the decision of
// the specialist whose number was first (still in the cache).
func TestCacheNeverReusesScopes(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	inner := &counting{Decider: engine}
	cached := NewCache(2*maxScopes, time.Hour).Wrap(inner)
	item := versioned(1)[0]
	first := h4r.Specialist{Type: "specialist", ID: "first", SecurityLevel: h4r.Public}
	cached.Decide(t.Context(), first, item)
	for i := range maxScopes {
		cached.Decide(t.Context(), h4r.Specialist{Type: "specialist", ID: fmt.Sprintf("s%d", i), SecurityLevel: h4r.Public}, item)
	}
	before := inner.calls.Load()
	cached.Decide(t.Context(), h4r.Specialist{Type: "specialist", ID: "later", SecurityLevel: h4r.Restricted, AuthorizedGroups: []string{"ops"}}, item)
	if inner.calls.Load() == before {
		t.Fatal("a new specialist was answered from the cache")
	}
}

// TestCacheNeverKeepsFailures: a failed decision is not cached, so it
// fails closed now and is asked again next time.
func TestCacheNeverKeepsFailures(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	inner := &counting{Decider: engine}
	cached := NewCache(100, time.Hour).Wrap(inner)
	items := versioned(3)
	inner.fail.Store(true)
	for _, r := range cached.DecideBatch(t.Context(), spec(h4r.Public), items) {
		if r.Err == nil || r.Decision.Allow {
			t.Fatalf("failing policy gave %+v", r)
		}
	}
	inner.fail.Store(false)
	for _, r := range cached.DecideBatch(t.Context(), spec(h4r.Public), items) {
		if r.Err != nil {
			t.Fatalf("recovered policy still fails: %v", r.Err)
		}
	}
	if got := inner.calls.Load(); got != 6 {
		t.Errorf("policy asked %d times, want 6 (failures are not cached)", got)
	}
}

func TestCacheExpires(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	inner := &counting{Decider: engine}
	cached := NewCache(100, time.Millisecond).Wrap(inner)
	items := versioned(1)
	cached.Decide(t.Context(), spec(h4r.Public), items[0])
	time.Sleep(20 * time.Millisecond) // well past the TTL: an expiry, not a timing assertion
	cached.Decide(t.Context(), spec(h4r.Public), items[0])
	if got := inner.calls.Load(); got != 2 {
		t.Errorf("policy asked %d times, want 2 (the entry expired)", got)
	}
}

func TestCachedDecisionsAreCopies(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cached := NewCache(10, time.Hour).Wrap(engine)
	it := memory(h4r.Metadata{ContainsPII: true, PIIFields: []string{"$.text"}, Version: 1})
	d, _ := cached.Decide(t.Context(), spec(h4r.Public), it)
	d.RedactedFields[0] = "$.changed"
	again, _ := cached.Decide(t.Context(), spec(h4r.Public), it)
	if again.RedactedFields[0] != "$.text" {
		t.Errorf("a caller changed the cached decision: %v", again.RedactedFields)
	}
}

func TestSpecialistKeyIsUnambiguous(t *testing.T) {
	a := h4r.Specialist{ID: "a", AuthorizedGroups: []string{"b", "c"}}
	b := h4r.Specialist{ID: "a", AuthorizedGroups: []string{"b\x00c"}}
	c := h4r.Specialist{ID: "a", AuthorizedGroups: []string{"bc"}}
	if specialistKey(a) == specialistKey(b) || specialistKey(a) == specialistKey(c) || specialistKey(b) == specialistKey(c) {
		t.Errorf("two specialists share a cache key")
	}
}

const allowNotes = "package cmo.context\n\ndefault allow := false\n\nallow if input.item.kind == \"note\"\n"

const allowAll = "package cmo.context\n\nallow := true\n"

func writePolicy(t *testing.T, dir, src string) {
	t.Helper()
	// Write and rename, as deploy tools do, so the watcher never sees half
	// a file.
	tmp := filepath.Join(dir, ".context.rego.tmp")
	if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "context.rego")); err != nil {
		t.Fatal(err)
	}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestLiveReload: a new policy is swapped in, a broken one is refused (the
// old one stays and Status says why), and a snapshot taken before a reload
// keeps deciding with its policy.
func TestLiveReload(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir, allowNotes)
	live, err := NewLive(t.Context(), dir, WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	item := memory(h4r.Metadata{}) // kind test_failure
	decide := func(d h4r.Decider) bool {
		t.Helper()
		got, err := d.Decide(t.Context(), spec(h4r.Public), item)
		if err != nil {
			t.Fatal(err)
		}
		return got.Allow
	}
	before := live.Snapshot()
	rev1 := live.Revision()
	if decide(before) {
		t.Fatal("first policy allows a test failure")
	}

	writePolicy(t, dir, allowAll)
	if err := live.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !decide(live.Snapshot()) || live.Revision() == rev1 {
		t.Fatalf("reloaded policy not in use (revision %s)", live.Revision())
	}
	if decide(before) {
		t.Error("a snapshot taken before the reload changed policy")
	}
	rev2 := live.Revision()

	writePolicy(t, dir, "package cmo.context\n\nallow if {\n")
	err = live.Reload(t.Context())
	if h4r.ErrorCode(err) != h4r.EINVALID || !strings.Contains(err.Error(), "context.rego:") {
		t.Fatalf("broken policy: error = %v, want invalid_argument naming context.rego:LINE", err)
	}
	st := live.Status()
	if live.Revision() != rev2 || !decide(live.Snapshot()) {
		t.Errorf("broken policy replaced the good one")
	}
	if st.LastError == "" || st.LastErrorAt == nil || st.Revision != rev2 || st.Reloads != 1 {
		t.Errorf("status after a refused reload = %+v", st)
	}

	writePolicy(t, dir, allowNotes)
	if err := live.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := live.Status(); st.LastError != "" || st.Revision != rev1 || st.Reloads != 2 {
		t.Errorf("status after a good reload = %+v", st)
	}
}

// TestLiveWatch: the watcher picks up a change of the directory by itself,
// and refuses a broken file.
func TestLiveWatch(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir, allowNotes)
	live, err := NewLive(t.Context(), dir, WithLogger(quiet()), WithWatch(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	rev1 := live.Revision()
	if !live.Status().Watching {
		t.Fatal("not watching")
	}
	writePolicy(t, dir, allowAll)
	waitFor(t, "the new policy", func() bool { return live.Revision() != rev1 })
	writePolicy(t, dir, "package cmo.context\n\nallow if {\n")
	waitFor(t, "the refusal", func() bool { return live.Status().LastError != "" })
	if live.Status().Reloads != 1 {
		t.Errorf("status = %+v", live.Status())
	}
}

// TestLiveWatchAppliesOnlyStableContent: the watcher applies what the
// directory held for a whole debounce, never what one read caught in the
// middle of a write. The reader here returns, once, right after a change, a
// half-written policy that compiles and allows everything (say, a deny rule
// not yet written); reads after it see the finished file. Before the fix the
// half-written policy went live and stayed, since no further change came.
func TestLiveWatchAppliesOnlyStableContent(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir, allowNotes)
	var armed atomic.Bool
	partial := []File{{Name: filepath.Join(dir, "context.rego"), Key: "context.rego", Source: allowAll}}
	midWrite := func(l *Live) {
		l.read = func() ([]File, map[string]any, error) {
			if armed.CompareAndSwap(true, false) {
				return partial, nil, nil
			}
			return Load(dir, false)
		}
	}
	live, err := NewLive(t.Context(), dir, WithLogger(quiet()), WithWatch(20*time.Millisecond), midWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	const final = allowNotes + "\nallow if input.item.kind == \"fix\"\n"
	finalRev := revision([]File{{Key: "context.rego", Source: final}}, nil)
	partialRev := revision(partial, nil)
	armed.Store(true)
	writePolicy(t, dir, final)
	waitFor(t, "the finished policy", func() bool {
		if live.Revision() == partialRev {
			t.Fatal("the half-written policy went live")
		}
		return live.Revision() == finalRev
	})
	if st := live.Status(); st.Reloads != 1 || armed.Load() {
		t.Errorf("status %+v (reader armed: %v), want one reload, after the half-written read", st, armed.Load())
	}
}

func TestLiveWatchBundle(t *testing.T) {
	dir := t.TempDir()
	path := writeBundle(t, dir, map[string]string{"p.rego": allowNotes})
	live, err := NewLive(t.Context(), path, WithLogger(quiet()), WithWatch(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	rev1 := live.Revision()
	sub := t.TempDir()
	newer := writeBundle(t, sub, map[string]string{"p.rego": allowAll})
	if err := os.Rename(newer, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new bundle", func() bool { return live.Revision() != rev1 })
}

func TestNewLiveRefusesABrokenFirstPolicy(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir, "package cmo.context\n\nallow if {\n")
	if _, err := NewLive(t.Context(), dir, WithLogger(quiet())); h4r.ErrorCode(err) != h4r.EINVALID {
		t.Fatalf("error = %v, want invalid_argument", err)
	}
}

// waitFor polls cond with a patient deadline: it asserts that something
// happens, not how fast.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConfigMapLayout: a policy mounted as Kubernetes mounts a ConfigMap
// (files are symlinks through ..data into a hidden timestamped directory)
// is read once, and replacing ..data reloads it.
func TestConfigMapLayout(t *testing.T) {
	dir := t.TempDir()
	mount := func(stamp, src string) {
		t.Helper()
		real := filepath.Join(dir, "..2026_11_21_"+stamp)
		if err := os.MkdirAll(real, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(real, "context.rego"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(filepath.Base(real), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	mount("1", allowNotes)
	if err := os.Symlink("..data/context.rego", filepath.Join(dir, "context.rego")); err != nil {
		t.Fatal(err)
	}
	live, err := NewLive(t.Context(), dir, WithLogger(quiet()), WithWatch(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if n := len(live.Engine().Files()); n != 1 {
		t.Fatalf("read %d modules, want the one behind the symlink", n)
	}
	rev1 := live.Revision()
	mount("2", allowAll)
	waitFor(t, "the new ConfigMap", func() bool { return live.Revision() != rev1 })
}
