// Package syncbuf is a bytes.Buffer safe for concurrent use: the sink
// tests give a logger that another goroutine (a consumer, a mirror, a
// server process's output) writes to while the test reads it.
package syncbuf
