package app

import "time"

// WithLearnedTimings shortens how often the learned embedder polls the
// saved model's name and checks for drift, for tests of several replicas.
func WithLearnedTimings(poll, check time.Duration) Option {
	return func(o *options) { o.modelPoll, o.relearnCheck = poll, check }
}
