package cputime

import (
	"fmt"
	"os"
	"time"
)

// OfProcess is the CPU time (user and system, every thread) process pid
// has used, read from /proc/pid/stat: for a benchmark that runs its
// server as another process.
func OfProcess(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	d, err := parseStat(b)
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	return d, nil
}
