// Package pgtest is the one helper every Postgres test uses to reach the
// test database: DSN finds it (skipping with the enable hint locally,
// failing in CI, where the Postgres tests must run), and Schema gives a test
// a schema of its own, dropped when the test ends.
package pgtest
