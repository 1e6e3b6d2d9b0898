package server

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/h4r/h4r"
)

// What the A2A methods do, whichever version asked: each codec (0.3 with
// the a2a-go types, 1.0 in a2av1.go) decodes into and encodes from these.

// a2aEmit receives the events of a streamed task, in order.
type a2aEmit func(ev a2a.Event) error

// send answers a message with a new task owned by the caller: the pack as
// its artifact (completed), or the reason it failed. The task is stored
// while it works, so that it can be canceled; emit, when not nil, gets the
// task, then its artifact, then its final status.
func (a *a2aService) send(ctx context.Context, caller a2aCaller, msg *a2a.Message, emit a2aEmit) (a2a.Task, error) {
	plan, err := a2aRequest(msg)
	if err != nil {
		return a2a.Task{}, err
	}
	if msg.TaskID != "" {
		if _, _, _, ok := a.tasks.get(caller.owner, msg.TaskID); !ok {
			return a2a.Task{}, fmt.Errorf("%w: no task %q", a2a.ErrTaskNotFound, msg.TaskID)
		}
		return a2a.Task{}, fmt.Errorf("%w: task %q has ended (each task answers one message); send the message without taskId", a2a.ErrUnsupportedOperation, msg.TaskID)
	}
	m := *msg
	m.TaskID = a2a.NewTaskID()
	if m.ContextID == "" {
		m.ContextID = a2a.NewContextID()
	}
	now := time.Now().UTC()
	task := &a2a.Task{ID: m.TaskID, ContextID: m.ContextID, History: []*a2a.Message{&m},
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &now}}
	buildCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	msgSize, _ := json.Marshal(&m)
	a.tasks.add(&a2aTask{owner: caller.owner, task: task, cancel: cancel, done: done, size: int64(len(msgSize)) + a2aTaskOverhead})
	var emitErr error
	if emit != nil {
		// A client gone mid-stream still gets its task ended (failed, as
		// its context is canceled), never left working.
		if emitErr = emit(task); emitErr != nil {
			emit = nil
		}
	}

	built := time.Now()
	p, data, size, err := a.pack(buildCtx, caller, plan)
	final := *task
	end := time.Now().UTC()
	if err != nil {
		text := a2a.NewMessageForTask(a2a.MessageRoleAgent, task, a2a.TextPart{Text: h4r.ErrorCode(err) + ": " + h4r.ErrorMessage(err)})
		final.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Message: text, Timestamp: &end}
		if h4r.ErrorCode(err) == h4r.EINTERNAL {
			a.s.log.ErrorContext(ctx, "a2a message failed", "error", err)
		}
	} else {
		final.Artifacts = []*a2a.Artifact{packArtifact(a2a.NewArtifactID(), data)}
		final.Status = a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: &end}
	}
	facts := factsOf(p, caller, built)
	stored, kept := a.tasks.update(caller.owner, task.ID, func(t *a2a.Task, e *a2aTask) bool {
		e.cancel = nil
		if t.Status.State.Terminal() {
			return false // canceled meanwhile: it stays canceled
		}
		*t = final
		if err == nil {
			e.facts = facts
		}
		return true
	})
	if kept {
		if stored.Status.State != final.Status.State {
			final = stored
		} else if err == nil {
			a.tasks.resize(caller.owner, task.ID, size+int64(len(msgSize))+a2aTaskOverhead)
		}
	}
	if emitErr != nil {
		return a2a.Task{}, emitErr
	}
	if emit != nil {
		if len(final.Artifacts) > 0 {
			if err := emit(&a2a.TaskArtifactUpdateEvent{TaskID: final.ID, ContextID: final.ContextID, Artifact: final.Artifacts[0], LastChunk: true}); err != nil {
				return a2a.Task{}, err
			}
		}
		if err := emit(&a2a.TaskStatusUpdateEvent{TaskID: final.ID, ContextID: final.ContextID, Status: final.Status, Final: true}); err != nil {
			return a2a.Task{}, err
		}
	}
	return final, nil
}

// a2aTaskOverhead is what a stored task costs beside its message and pack.
const a2aTaskOverhead = 1024

func packArtifact(id a2a.ArtifactID, data map[string]any) *a2a.Artifact {
	return &a2a.Artifact{
		ID:          id,
		Name:        a2aArtifactName,
		Description: "the context pack (the body POST /v1/context-pack answers)",
		Parts:       a2a.ContentParts{a2a.DataPart{Data: data}},
	}
}

// factsOf records what p was built from (nil without a pack).
func factsOf(p *h4r.Pack, caller a2aCaller, built time.Time) *packFacts {
	if p == nil {
		return nil
	}
	f := &packFacts{built: built, revision: p.Explainability.Slicing.PolicyRevision, spec: caller.spec, audit: caller.audit,
		versions: make(map[string]int, len(p.Results))}
	for _, r := range p.Results {
		f.versions[r.ID] = r.Metadata.Version
	}
	for _, e := range p.Explainability.Items {
		if _, ok := f.versions[e.ID]; !ok {
			f.named = append(f.named, e.ID)
		}
	}
	return f
}

// get returns the caller's task. Its pack is served as stored only while
// the slicer would deliver the same now: the same caller, policy revision
// and item versions, no item it names deleted or changed. Otherwise it is
// built again for the caller, so that a deleted or newly restricted item
// never comes back through a stored task.
func (a *a2aService) get(ctx context.Context, caller a2aCaller, id a2a.TaskID) (a2a.Task, error) {
	t, facts, _, ok := a.tasks.get(caller.owner, id)
	if !ok {
		return a2a.Task{}, fmt.Errorf("%w: no task %q", a2a.ErrTaskNotFound, id)
	}
	if t.Status.State != a2a.TaskStateCompleted || len(t.Artifacts) == 0 || a.fresh(ctx, caller, facts) {
		return t, nil
	}
	return a.rebuild(ctx, caller, t)
}

// fresh reports whether a stored pack is what the slicer would deliver
// now. Without a policy revision to compare it cannot know, and says no.
func (a *a2aService) fresh(ctx context.Context, caller a2aCaller, f *packFacts) bool {
	if f == nil || f.audit != caller.audit || !reflect.DeepEqual(f.spec, caller.spec) {
		return false
	}
	if rev := a.policyRevision(); rev == "" || rev != f.revision {
		return false
	}
	for id, v := range f.versions {
		it, err := a.s.store.Get(ctx, id)
		if err != nil || it.Metadata.Version != v {
			return false
		}
	}
	for _, id := range f.named {
		it, err := a.s.store.Get(ctx, id)
		if err != nil || !it.Metadata.UpdatedAt.Before(f.built) {
			return false
		}
	}
	return true
}

// policyRevision is the revision of the policy that decides now, or "".
func (a *a2aService) policyRevision() string {
	if a.s.policy == nil {
		return ""
	}
	if r, ok := a.s.policy.(interface{ Revision() string }); ok {
		return r.Revision()
	}
	return a.s.policy.Status().Revision
}

// rebuild builds t's pack again from its message, for the caller, and
// stores it in place of the old one.
func (a *a2aService) rebuild(ctx context.Context, caller a2aCaller, t a2a.Task) (a2a.Task, error) {
	if len(t.History) == 0 {
		return a2a.Task{}, fmt.Errorf("%w: task %q has no message to rebuild its pack from", a2a.ErrInternalError, t.ID)
	}
	plan, err := a2aRequest(t.History[0])
	if err != nil {
		return a2a.Task{}, fmt.Errorf("rebuilding the pack of task %s: %w", t.ID, err)
	}
	built := time.Now()
	p, data, size, err := a.pack(ctx, caller, plan)
	if err != nil {
		if h4r.ErrorCode(err) == h4r.EINTERNAL {
			a.s.log.ErrorContext(ctx, "a2a: rebuilding a task's pack failed", "task", t.ID, "error", err)
		}
		return a2a.Task{}, fmt.Errorf("%w: the task's pack was out of date (policy or items changed) and building it again failed: %s: %s",
			a2a.ErrInternalError, h4r.ErrorCode(err), h4r.ErrorMessage(err))
	}
	t.Artifacts = []*a2a.Artifact{packArtifact(t.Artifacts[0].ID, data)}
	facts := factsOf(p, caller, built)
	if _, ok := a.tasks.update(caller.owner, t.ID, func(s *a2a.Task, e *a2aTask) bool {
		s.Artifacts = t.Artifacts
		e.facts = facts
		return true
	}); ok {
		a.tasks.resize(caller.owner, t.ID, size+a2aTaskOverhead)
	}
	return t, nil
}

// cancel cancels the caller's task while it works; an ended task cannot
// be canceled.
func (a *a2aService) cancel(caller a2aCaller, id a2a.TaskID) (a2a.Task, error) {
	var ended a2a.TaskState
	t, ok := a.tasks.update(caller.owner, id, func(t *a2a.Task, e *a2aTask) bool {
		if t.Status.State.Terminal() {
			ended = t.Status.State
			return false
		}
		now := time.Now().UTC()
		t.Status = a2a.TaskStatus{State: a2a.TaskStateCanceled, Timestamp: &now}
		if e.cancel != nil {
			e.cancel()
		}
		return true
	})
	if !ok {
		return a2a.Task{}, fmt.Errorf("%w: no task %q", a2a.ErrTaskNotFound, id)
	}
	if ended != "" {
		return a2a.Task{}, fmt.Errorf("%w: task %q has already ended (%s)", a2a.ErrTaskNotCancelable, id, ended)
	}
	return t, nil
}

// subscribe streams a working task until it ends: the task now, then its
// artifact and final status. An ended task has nothing more to stream.
func (a *a2aService) subscribe(ctx context.Context, caller a2aCaller, id a2a.TaskID, emit a2aEmit) error {
	t, _, done, ok := a.tasks.get(caller.owner, id)
	if !ok {
		return fmt.Errorf("%w: no task %q", a2a.ErrTaskNotFound, id)
	}
	if t.Status.State.Terminal() {
		return fmt.Errorf("%w: task %q has ended (%s); read it with GetTask (tasks/get)", a2a.ErrUnsupportedOperation, id, t.Status.State)
	}
	if err := emit(&t); err != nil {
		return err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("waiting for task %s: %w", id, ctx.Err())
	}
	t, err := a.get(ctx, caller, id)
	if err != nil {
		return err
	}
	if len(t.Artifacts) > 0 {
		if err := emit(&a2a.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Artifact: t.Artifacts[0], LastChunk: true}); err != nil {
			return err
		}
	}
	return emit(&a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status, Final: true})
}

// pack builds the pack for the caller within the request deadline, as the
// other pack routes do (the engine admits it). A busy server is an
// unavailable error here, not an empty artifact: a task that was never
// worked on fails rather than completing with nothing. It returns the pack,
// the JSON object a data part holds, and its encoded size.
func (a *a2aService) pack(ctx context.Context, caller a2aCaller, plan *h4r.Plan) (*h4r.Pack, map[string]any, int64, error) {
	plan.Audit = caller.audit
	plan.BusyError = true
	ctx, cancel := context.WithTimeout(ctx, a.s.requestTimeout)
	defer cancel()
	p, err := a.s.engine.Run(ctx, caller.spec, plan)
	if err != nil {
		return nil, nil, 0, err
	}
	a.s.metrics.ObservePack(p)
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("encoding the pack: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, 0, fmt.Errorf("decoding the pack as data: %w", err)
	}
	return p, out, int64(len(raw)), nil
}
