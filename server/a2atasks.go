package server

import (
	"cmp"
	"container/list"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/h4r/h4r"
)

// Defaults of A2AOptions (H4R_A2A_TASK_TTL, H4R_A2A_TASK_MAX,
// H4R_A2A_TASK_MAX_BYTES).
const (
	DefaultA2ATaskTTL      = time.Hour
	DefaultA2ATaskMax      = 1000
	DefaultA2ATaskMaxBytes = 64 << 20
)

// A2AOptions configures the A2A protocol endpoint.
type A2AOptions struct {
	// PublicURL is the base URL clients reach this server at (scheme,
	// host, optional path prefix); the agent card's interfaces are built
	// from it. Empty: the address the connection came in on, never a
	// request header.
	PublicURL string
	// TaskTTL is how long a task may be read after it was made.
	TaskTTL time.Duration
	// TaskMax and TaskMaxBytes bound the tasks kept: past either, the
	// oldest are dropped first.
	TaskMax      int
	TaskMaxBytes int64
}

// WithA2A configures the A2A protocol endpoint (zero fields keep their
// defaults).
func WithA2A(o A2AOptions) Option { return func(s *Server) { s.a2aOpts = o } }

func (o A2AOptions) withDefaults() A2AOptions {
	if o.TaskTTL <= 0 {
		o.TaskTTL = DefaultA2ATaskTTL
	}
	if o.TaskMax <= 0 {
		o.TaskMax = DefaultA2ATaskMax
	}
	if o.TaskMaxBytes <= 0 {
		o.TaskMaxBytes = DefaultA2ATaskMaxBytes
	}
	return o
}

// packFacts are what a task's pack was built from, so that a read can tell
// whether the pack is still what the slicer would deliver now.
type packFacts struct {
	built    time.Time      // when the pack's build started
	revision string         // the policy revision it was sliced at
	versions map[string]int // delivered item → the version delivered
	named    []string       // items it explains without delivering them (left out by a budget)
	spec     h4r.Specialist // whom it was sliced for
	audit    bool
}

// a2aTask is one stored task. Its fields are guarded by the store's lock;
// task is replaced, never changed in place, so a snapshot may share it.
type a2aTask struct {
	owner   string
	created time.Time
	task    *a2a.Task
	facts   *packFacts // nil: no pack (failed, canceled, still working)
	size    int64
	cancel  context.CancelFunc // stops the pack build while the task works
	done    chan struct{}      // closed when the build has ended
	elem    *list.Element
}

// a2aTaskStore keeps the A2A tasks of this process. A task belongs to the
// key that sent its message: to any other key it does not exist. The store
// is bounded by count, bytes and age; the oldest task goes first.
type a2aTaskStore struct {
	opts A2AOptions
	now  func() time.Time

	mu    sync.Mutex
	byID  map[a2a.TaskID]*a2aTask
	order *list.List // *a2aTask, oldest first
	bytes int64
}

func newA2ATaskStore(opts A2AOptions, now func() time.Time) *a2aTaskStore {
	return &a2aTaskStore{opts: opts.withDefaults(), now: now, byID: map[a2a.TaskID]*a2aTask{}, order: list.New()}
}

// add stores a new task and drops what no longer fits.
func (st *a2aTaskStore) add(e *a2aTask) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e.created = st.now()
	e.elem = st.order.PushBack(e)
	st.byID[e.task.ID] = e
	st.bytes += e.size
	st.trim()
}

// trim drops expired tasks, then the oldest until both bounds hold.
func (st *a2aTaskStore) trim() {
	now := st.now()
	for f := st.order.Front(); f != nil; f = st.order.Front() {
		e := f.Value.(*a2aTask)
		if now.Sub(e.created) < st.opts.TaskTTL && st.order.Len() <= st.opts.TaskMax && st.bytes <= st.opts.TaskMaxBytes {
			return
		}
		st.remove(e)
	}
}

func (st *a2aTaskStore) remove(e *a2aTask) {
	st.order.Remove(e.elem)
	delete(st.byID, e.task.ID)
	st.bytes -= e.size
}

// lookup returns owner's live task id, or nil. The caller holds the lock.
func (st *a2aTaskStore) lookup(owner string, id a2a.TaskID) *a2aTask {
	e := st.byID[id]
	if e == nil || e.owner != owner {
		return nil
	}
	if st.now().Sub(e.created) >= st.opts.TaskTTL {
		st.remove(e)
		return nil
	}
	return e
}

// get returns a copy of owner's task id and the facts of its pack; ok is
// false when there is no such task for owner.
func (st *a2aTaskStore) get(owner string, id a2a.TaskID) (task a2a.Task, facts *packFacts, done <-chan struct{}, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.lookup(owner, id)
	if e == nil {
		return a2a.Task{}, nil, nil, false
	}
	return *e.task, e.facts, e.done, true
}

// update replaces owner's task id with what change makes of a copy of it,
// unless the task is gone. change returns false to leave the task as it is.
func (st *a2aTaskStore) update(owner string, id a2a.TaskID, change func(t *a2a.Task, e *a2aTask) bool) (a2a.Task, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.lookup(owner, id)
	if e == nil {
		return a2a.Task{}, false
	}
	t := *e.task
	if change(&t, e) {
		e.task = &t
	}
	return *e.task, true
}

// resize records a task's new size and drops what no longer fits.
func (st *a2aTaskStore) resize(owner string, id a2a.TaskID, size int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if e := st.lookup(owner, id); e != nil {
		st.bytes += size - e.size
		e.size = size
		st.trim()
	}
}

// list returns copies of owner's live tasks, newest first.
func (st *a2aTaskStore) list(owner string) []a2a.Task {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.trim()
	type dated struct {
		t  a2a.Task
		at time.Time
	}
	var out []dated
	for _, e := range st.byID {
		if e.owner == owner {
			out = append(out, dated{*e.task, e.created})
		}
	}
	slices.SortFunc(out, func(a, b dated) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return cmp.Compare(a.t.ID, b.t.ID)
	})
	tasks := make([]a2a.Task, len(out))
	for i, d := range out {
		tasks[i] = d.t
	}
	return tasks
}

// stats returns how many tasks are kept and their bytes.
func (st *a2aTaskStore) stats() (count int, bytes int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.order.Len(), st.bytes
}
