package sqlite_test

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time the calling OS thread has used, in ns.
func threadCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// measureCPU pins the benchmark's goroutine to its thread and, when done
// is called after the loop, reports the thread's CPU time per op: on a
// shared, loaded machine wall time counts the time other processes held
// the cores; this metric does not. The store's queries run on the calling
// goroutine (modernc SQLite is Go, called in line), so they are counted.
// (The same helper as sources/bm25's.)
func measureCPU(b *testing.B) (done func()) {
	runtime.LockOSThread()
	start := threadCPU()
	return func() {
		b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
		runtime.UnlockOSThread()
	}
}
