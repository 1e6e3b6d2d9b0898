//go:build race

package sqlite_test

// raceEnabled: the race detector slows the dataset-wide tests about
// tenfold, past go test's 10-minute default, so they skip under it.
const raceEnabled = true
