package cputime

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadKnown says whether Thread reads a real figure.
const threadKnown = true

// Thread is the CPU time the calling OS thread has used; 0 when unknown.
func Thread() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
