package cputime

import (
	"os"
	"testing"
	"time"
)

// OfProcess reads this process's own CPU time from /proc after some work:
// more than none, and no more than the process's count by getrusage,
// which the kernel keeps at a finer grain.
func TestOfProcessReadsProc(t *testing.T) {
	deadline := time.Now().Add(50 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	got, err := OfProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self := Process(); got <= 0 || got > self+time.Second/userHZ {
		t.Fatalf("OfProcess = %v, getrusage %v", got, self)
	}
	if _, err := OfProcess(-1); err == nil {
		t.Fatal("no error for process -1")
	}
}
