//go:build unix

package storetest

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) this process has used; on a
// shared machine it says what a query costs better than the time it took.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
