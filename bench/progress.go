package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress draws one progress line on a terminal stream (stderr): a bar,
// done/total, the rate and the time left. It redraws at most every 200 ms so
// that a fast loop does not spend its time printing. A nil writer draws
// nothing. It is safe for concurrent use.
type progress struct {
	w     io.Writer
	label string
	total int
	start time.Time

	mu    sync.Mutex
	done  int
	drawn time.Time
	// reached is set by the first reach, which restarts the clock: work
	// that reports a running total may begin long after the bar is made.
	// from is that first total, which the rate does not count.
	reached bool
	from    int
}

func newProgress(w io.Writer, label string, total int) *progress {
	return &progress{w: w, label: label, total: total, start: time.Now()}
}

// add counts n more units done.
func (p *progress) add(n int) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance(p.done + n)
}

// reach sets the units done in all, for work that reports a running total
// rather than each step; a total below the last is ignored.
func (p *progress) reach(done int) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reached {
		p.reached, p.start, p.from = true, time.Now(), done
	}
	if done > p.done {
		p.advance(done)
	}
}

// advance sets done and redraws if the last drawing is old enough or the
// work is done; the caller holds mu.
func (p *progress) advance(done int) {
	p.done = done
	if now := time.Now(); now.Sub(p.drawn) >= 200*time.Millisecond || p.done == p.total {
		p.drawn = now
		p.draw(now)
	}
}

// finish draws the final state and ends the line.
func (p *progress) finish() {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw(time.Now())
	fmt.Fprintln(p.w)
}

func (p *progress) draw(now time.Time) {
	const width = 24
	elapsed := now.Sub(p.start)
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(p.done)/float64(p.total), 1)
	}
	filled := int(frac * width)
	rate := float64(p.done-p.from) / max(elapsed.Seconds(), 1e-9)
	eta := "-"
	if rate > 0 && p.total > p.done {
		eta = time.Duration(float64(p.total-p.done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %.1f/s left %s   ", p.label,
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.done, p.total, rate, eta)
}
