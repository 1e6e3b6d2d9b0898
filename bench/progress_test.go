package bench

import (
	"strings"
	"testing"
)

// TestProgressReach: a running total moves the bar to it, a total below
// the last one is ignored, and add and reach count together.
func TestProgressReach(t *testing.T) {
	var out strings.Builder
	p := newProgress(&out, "embedding", 10)
	p.reach(4)
	p.reach(2) // an older total, reported late
	if p.done != 4 {
		t.Errorf("done %d after reaching 4 then 2, want 4", p.done)
	}
	p.add(1)
	if p.done != 5 {
		t.Errorf("done %d after adding 1 to 4, want 5", p.done)
	}
	p.reach(10)
	p.finish()
	lines := strings.Split(out.String(), "\r")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "10/10") || !strings.HasSuffix(last, "\n") {
		t.Errorf("the last drawing is %q, want 10/10 and a line end", last)
	}
}

// TestProgressWithoutWriter: a progress with no writer counts nothing and
// draws nothing, so callers need not check.
func TestProgressWithoutWriter(t *testing.T) {
	p := newProgress(nil, "embedding", 10)
	p.reach(5)
	p.add(2)
	p.finish()
	if p.done != 0 {
		t.Errorf("done %d without a writer, want 0", p.done)
	}
}
