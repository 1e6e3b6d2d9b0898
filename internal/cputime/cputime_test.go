package cputime_test

import (
	"runtime"
	"testing"

	"github.com/h4r/h4r/internal/cputime"
)

// spin burns CPU on the calling goroutine.
func spin() (x uint64) {
	for i := range uint64(50_000_000) {
		x += i * i
	}
	return x
}

// Work on the calling thread raises both the thread's and the process's
// CPU time (where they are known).
func TestCPUTimeGrowsWithWork(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p0, t0 := cputime.Process(), cputime.Thread()
	if spin() == 1 {
		t.Log("unreachable")
	}
	if runtime.GOOS == "linux" {
		if d := cputime.Thread() - t0; d <= 0 {
			t.Errorf("thread CPU time did not grow: %v", d)
		}
	}
	if p0 != 0 {
		if d := cputime.Process() - p0; d <= 0 {
			t.Errorf("process CPU time did not grow: %v", d)
		}
	}
}
