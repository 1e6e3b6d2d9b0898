package cputime

import (
	"runtime"
	"testing"
)

// MeasureThread pins the benchmark's goroutine to its thread and, when the
// returned done is called after the loop, reports the thread's CPU time
// per op as "cpu-ns/op". Background GC on other threads is not counted,
// its assists are. Where a thread's CPU time is unknown it reports
// nothing.
func MeasureThread(b *testing.B) (done func()) {
	if !threadKnown {
		return func() {}
	}
	runtime.LockOSThread()
	start := Thread()
	return func() {
		b.ReportMetric(float64(Thread()-start)/float64(b.N), "cpu-ns/op")
		runtime.UnlockOSThread()
	}
}

// MeasureProcess reports, when the returned done is called after the
// loop, the CPU time the whole process used per op as "proc-cpu-ns/op"
// (every thread: parallel work and garbage collection included). Where
// the process's CPU time is unknown it reports nothing.
func MeasureProcess(b *testing.B) (done func()) {
	if Process() == 0 {
		return func() {}
	}
	start := Process()
	return func() { b.ReportMetric(float64(Process()-start)/float64(b.N), "proc-cpu-ns/op") }
}
