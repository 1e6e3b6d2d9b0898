package gctune_test

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/h4r/h4r/internal/gctune"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		name           string
		live, headroom uint64
		ceiling, want  int
	}{
		{"small heap keeps the process's GOGC", 63 * mb, 128 * mb, 100, 100},
		{"heap twice the headroom", 256 * mb, 128 * mb, 100, 50},
		{"heap at 100k items", 264 * mb, 128 * mb, 100, 48},
		{"heap far above the headroom stops at the floor", 1515 * mb, 128 * mb, 100, gctune.MinPercent},
		{"a lower GOGC of the process is the ceiling", 200 * mb, 128 * mb, 30, 30},
		{"a GOGC below the floor is kept", 4000 * mb, 128 * mb, 5, 5},
		{"nothing live yet", 0, 128 * mb, 100, 100},
		{"a small heap gets the headroom under a higher ceiling", 64 * mb, 128 * mb, 400, 200},
		{"a tiny heap stops at the higher ceiling", 10 * mb, 128 * mb, 400, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := gctune.Percent(tt.live, tt.headroom, tt.ceiling); got != tt.want {
				t.Errorf("Percent(%d MB live, %d MB headroom, %d) = %d, want %d", tt.live/mb, tt.headroom/mb, tt.ceiling, got, tt.want)
			}
		})
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestStartSetsGOGCForTheLiveHeap: after a collection the tuner sets GOGC
// to the headroom over the live heap, within its ceiling, and stop gives
// the process its GOGC back.
func TestStartSetsGOGCForTheLiveHeap(t *testing.T) {
	tests := []struct {
		name               string
		liveMB, headroomMB int
		opts               []gctune.Option
		min, max           int // the test binary's own heap is live too: a little under headroom/live
	}{
		{"a large heap gets less than the process's GOGC", 128, 32, nil, 20, 26},
		{"a ceiling above the process's lets a small heap have the headroom", 32, 64, []gctune.Option{gctune.WithCeiling(400)}, 150, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := debug.SetGCPercent(100)
			defer debug.SetGCPercent(before)
			live := make([]byte, tt.liveMB<<20)
			for i := range live {
				live[i] = byte(i)
			}
			// A cycle before Start, so that the first live heap the tuner
			// reads is this test's, not one an earlier test left.
			runtime.GC()
			stop := gctune.Start(t.Context(), uint64(tt.headroomMB)<<20, append(tt.opts, gctune.WithInterval(5*time.Millisecond))...)
			deadline := time.Now().Add(5 * time.Second)
			for gogc() == 100 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := gogc(); got < tt.min || got > tt.max {
				t.Errorf("GOGC = %d with %d MB live and %d MB of headroom, want %d to %d", got, tt.liveMB, tt.headroomMB, tt.min, tt.max)
			}
			runtime.KeepAlive(live)
			stop()
			if got := gogc(); got != 100 {
				t.Errorf("GOGC = %d after stop, want the process's 100 back", got)
			}
		})
	}
}

func TestStartWithoutHeadroomChangesNothing(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	live := make([]byte, 64<<20)
	stop := gctune.Start(t.Context(), 0, gctune.WithInterval(time.Millisecond))
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if got := gogc(); got != 100 {
		t.Errorf("GOGC = %d with the tuner off, want 100", got)
	}
	runtime.KeepAlive(live)
	stop()
}

// TestStartLeavesTheCollectorOff: with GOGC=off the tuner neither turns
// the collector on nor, at stop, sets a percentage.
func TestStartLeavesTheCollectorOff(t *testing.T) {
	before := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(before)
	off := gogc()
	stop := gctune.Start(t.Context(), 32<<20, gctune.WithInterval(time.Millisecond))
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if got := gogc(); got != off {
		t.Errorf("GOGC metric %d while the tuner ran with the collector off, want %d (off)", got, off)
	}
	stop()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GOGC was %d after stop, want it still off (-1)", got)
	}
}
