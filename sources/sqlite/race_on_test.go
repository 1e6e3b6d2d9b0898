//go:build race

package sqlite_test

// raceEnabled: the race detector slows the dataset-wide tests about
// tenfold, so they sample queries as with -short.
const raceEnabled = true
