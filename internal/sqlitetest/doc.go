// Package sqlitetest holds what tests of the embedded store need from
// outside it: HoldWriteLock takes the store file's write lock on a
// connection of its own, as another process's write would, so that a test
// can show what waits for that lock and what does not.
package sqlitetest
