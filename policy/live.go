package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/h4r/h4r"
)

// DefaultDebounce is how long Live waits after the last change to the
// policy files before it reloads (editors write a file in several steps).
const DefaultDebounce = 100 * time.Millisecond

// Live is the embedded policy that can be replaced while the server runs:
// Reload (called by the watcher on every change of the policy directory or
// bundle file) compiles the policy anew and swaps it in atomically.
// Requests take a Snapshot and finish on the policy they started with. A
// policy that does not compile is refused: the old one stays, the error is
// logged and kept in Status until a reload succeeds.
type Live struct {
	path     string
	cache    *Cache
	log      *slog.Logger
	now      func() time.Time
	debounce time.Duration
	watch    bool
	opts     []Option // of every compile
	// read reads the policy's files (Load; tests replace it to change what
	// a read sees between two reads).
	read func() ([]File, map[string]any, error)

	current atomic.Pointer[Engine]
	mu      sync.Mutex // guards status and serialises reloads
	status  h4r.PolicyStatus

	stop chan struct{}
	done chan struct{}
}

// LiveOption configures NewLive.
type LiveOption func(*Live)

// WithCache caches decisions in c (shared across reloads; keys carry the
// revision).
func WithCache(c *Cache) LiveOption { return func(l *Live) { l.cache = c } }

// WithLogger sets the logger reloads are reported to.
func WithLogger(log *slog.Logger) LiveOption { return func(l *Live) { l.log = log } }

// WithWatch watches the policy path and reloads on change, debounce after
// the last change (0: DefaultDebounce). Without it, only Reload reloads.
func WithWatch(debounce time.Duration) LiveOption {
	return func(l *Live) {
		l.watch = true
		l.debounce = debounce
		if l.debounce <= 0 {
			l.debounce = DefaultDebounce
		}
	}
}

// WithEngineOptions passes opts to every compile of the policy
// (WithCompiledPredicates, WithNetworkBuiltins, WithDecisionMemo).
func WithEngineOptions(opts ...Option) LiveOption {
	return func(l *Live) { l.opts = append(l.opts, opts...) }
}

// WithClock sets the clock of Status times (tests).
func WithClock(now func() time.Time) LiveOption { return func(l *Live) { l.now = now } }

// NewLive loads the policy at path ("" for the bundled policy, which is
// never watched). It fails if the first load fails: a server must not start
// without a policy.
func NewLive(ctx context.Context, path string, opts ...LiveOption) (*Live, error) {
	l := &Live{path: path, log: slog.Default(), now: time.Now}
	l.read = func() ([]File, map[string]any, error) { return Load(l.path, false) }
	for _, o := range opts {
		o(l)
	}
	e, err := l.load(ctx)
	if err != nil {
		return nil, err
	}
	l.current.Store(e)
	l.status = h4r.PolicyStatus{Mode: h4r.PolicyEmbedded, Source: e.Source(), Revision: e.Revision(), LoadedAt: l.now().UTC()}
	if l.watch && path != "" {
		if err := l.startWatch(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// load reads and compiles the policy.
func (l *Live) load(ctx context.Context) (*Engine, error) {
	if l.path == "" {
		return New(ctx, l.opts...)
	}
	files, data, err := l.read()
	if err != nil {
		return nil, err
	}
	return l.compile(ctx, files, data)
}

// compile compiles files read from the policy path.
func (l *Live) compile(ctx context.Context, files []File, data map[string]any) (*Engine, error) {
	cfg := config{memo: DefaultDecisionMemo, predicates: DefaultCompiledPredicates}
	for _, o := range l.opts {
		o(&cfg)
	}
	return compile(ctx, files, data, l.path, cfg)
}

// Engine returns the policy in use now.
func (l *Live) Engine() *Engine { return l.current.Load() }

// Snapshot returns the policy in use now, with the decision cache in front
// when there is one: what one request decides with.
func (l *Live) Snapshot() h4r.Decider {
	e := l.current.Load()
	if l.cache != nil {
		return l.cache.Wrap(e)
	}
	return e
}

// Decide decides one item with the policy in use now (Snapshot is better
// for several items: they are all decided by the same policy).
func (l *Live) Decide(ctx context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, error) {
	return l.Snapshot().Decide(ctx, spec, item)
}

// Revision is the revision of the policy in use now.
func (l *Live) Revision() string { return l.current.Load().Revision() }

// Source is where the policy comes from.
func (l *Live) Source() string { return l.current.Load().Source() }

// Status returns the policy's status.
func (l *Live) Status() h4r.PolicyStatus {
	l.mu.Lock()
	s := l.status
	l.mu.Unlock()
	if l.cache != nil {
		cs := l.cache.Stats()
		s.Cache = &cs
	}
	return s
}

// Reload compiles the policy again and swaps it in if it compiles. An
// unchanged policy (same revision) is not swapped. The error of a policy
// that does not compile is returned, logged and kept in Status; the old
// policy stays in use.
func (l *Live) Reload(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, err := l.load(ctx)
	return l.swap(ctx, e, err)
}

// swap puts e in use, or, given the error of reading or compiling it,
// records the refusal. l.mu is held.
func (l *Live) swap(ctx context.Context, e *Engine, err error) error {
	if err != nil {
		at := l.now().UTC()
		l.status.LastError, l.status.LastErrorAt = err.Error(), &at
		l.log.ErrorContext(ctx, "policy reload refused; the previous policy stays in use",
			"source", l.path, "revision", l.status.Revision, "error", err)
		return err
	}
	l.status.LastError, l.status.LastErrorAt = "", nil
	if e.Revision() == l.status.Revision {
		return nil
	}
	old := l.status.Revision
	l.current.Store(e)
	l.status.Revision, l.status.LoadedAt = e.Revision(), l.now().UTC()
	l.status.Reloads++
	l.log.InfoContext(ctx, "policy reloaded", "source", l.path, "revision", e.Revision(), "previous_revision", old)
	return nil
}

// Close stops watching. It is safe to call more than once.
func (l *Live) Close() error {
	if l.stop == nil {
		return nil
	}
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
	return nil
}

// startWatch watches the policy directory (every subdirectory) or, for a
// bundle, the directory holding it: editors and deploy tools replace files
// by renaming, which a watch on the file itself would lose.
func (l *Live) startWatch() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return errors.Join(errors.New("watching the policy"), err)
	}
	bundleFile := ""
	if IsBundle(l.path) {
		bundleFile = filepath.Clean(l.path)
		err = w.Add(filepath.Dir(bundleFile))
	} else {
		err = addTree(w, l.path)
	}
	if err != nil {
		w.Close()
		return errors.Join(errors.New("watching the policy "+l.path), err)
	}
	l.status.Watching = true
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.watchLoop(w, bundleFile)
	return nil
}

func addTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return w.Add(path)
		}
		return nil
	})
}

// watchLoop reloads after changes, once what the files hold has been the
// same for a debounce: when the watcher has been quiet for a debounce it
// reads the files, and applies them only if a read one debounce earlier
// found the same (else it reads again after another debounce). Editors and
// copies write a file in several steps, and a read can fall between two of
// them; a half-written policy can compile and lack a deny rule, so it must
// never go live, even for a moment.
func (l *Live) watchLoop(w *fsnotify.Watcher, bundleFile string) {
	defer close(l.done)
	defer w.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	pending := "" // what the last read found; "" for no read yet
	for {
		select {
		case <-l.stop:
			timer.Stop()
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if bundleFile != "" && filepath.Clean(ev.Name) != bundleFile {
				continue
			}
			if bundleFile == "" && ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					_ = addTree(w, ev.Name) // a new subdirectory: watch it too
				}
			}
			pending = ""
			timer.Reset(l.debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			l.log.Warn("watching the policy", "source", l.path, "error", err)
		case <-timer.C:
			files, data, err := l.read()
			seen := "error: " + fmt.Sprint(err)
			if err == nil {
				seen = "revision: " + revision(files, data)
			}
			if seen != pending {
				pending = seen
				timer.Reset(l.debounce)
				continue
			}
			pending = ""
			ctx := context.Background()
			var e *Engine
			if err == nil {
				e, err = l.compile(ctx, files, data)
			}
			// An error is logged and kept in Status by swap.
			l.mu.Lock()
			_ = l.swap(ctx, e, err)
			l.mu.Unlock()
		}
	}
}
