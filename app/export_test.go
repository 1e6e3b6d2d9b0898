package app

import (
	"context"
	"time"
)

// WithLearnedTimings shortens how often the learned embedder polls the
// saved model's name and checks for drift, for tests of several replicas.
func WithLearnedTimings(poll, check time.Duration) Option {
	return func(o *options) { o.modelPoll, o.relearnCheck = poll, check }
}

// CheckLearned runs the learned embedder's periodic drift check now.
func (a *App) CheckLearned(ctx context.Context) (bool, error) { return a.learner.check(ctx) }

// LockLearning takes the learning lock among the replicas, as a learning
// on this replica would hold it.
func (a *App) LockLearning(ctx context.Context) (unlock func(), ok bool, err error) {
	return a.learner.lockShared(ctx, false)
}

// LearnedModelName is the name of the learned model this replica holds.
func (a *App) LearnedModelName() string { return a.learner.emb.Model() }
