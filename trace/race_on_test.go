//go:build race

package trace_test

// raceEnabled: the race detector slows seeding 10k traces about tenfold,
// so the 10k golden test skips under it (its small twin still runs).
const raceEnabled = true
