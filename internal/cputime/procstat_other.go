//go:build !linux

package cputime

import (
	"errors"
	"time"
)

// OfProcess is unknown here: another process's CPU time is read from
// Linux's /proc only.
func OfProcess(pid int) (time.Duration, error) {
	return 0, errors.New("the CPU time of another process is read from /proc, on Linux only")
}
