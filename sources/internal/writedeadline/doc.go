// Package writedeadline bounds a store's writes. A write waits for the
// store's one writer (SQLite's connection, Postgres's statistics row lock)
// behind every write before it; without a bound, a burst of ingests queues
// for as long as the burst lasts. Within gives a write its deadline, and
// its finish function turns a write that the deadline ended into an
// unavailable *h4r.Error, which the server answers with 503 and
// Retry-After. The stores roll such a write back, so nothing of it is
// written.
package writedeadline
