// Package golden compares test output with golden files under testdata/,
// and rewrites them when a test runs with -update. It is shared by the
// tests of several packages, each of which declares its own -update flag.
package golden
