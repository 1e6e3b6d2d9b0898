// Package procmem reads a process's resident memory (its current and
// peak resident set) from /proc, for benchmarks and the load test: the
// figure an operator's memory limit applies to, which Go's own heap
// statistics leave out (SQLite's page cache, stacks, memory the runtime
// has not yet returned).
package procmem
