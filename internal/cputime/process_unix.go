//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time (user and system) this process has used, every
// thread included; 0 when unknown.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
