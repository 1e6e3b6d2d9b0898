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
	p.done += n
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
	rate := float64(p.done) / max(elapsed.Seconds(), 1e-9)
	eta := "-"
	if rate > 0 && p.total > p.done {
		eta = time.Duration(float64(p.total-p.done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %.1f/s left %s   ", p.label,
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.done, p.total, rate, eta)
}
