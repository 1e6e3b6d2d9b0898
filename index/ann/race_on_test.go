//go:build race

package ann_test

// raceEnabled: the race detector slows the index about two hundredfold, so the
// 100,000-vector growth test runs a smaller corpus under it (its
// concurrency is still checked); .ci/run runs it whole without -race.
const raceEnabled = true
