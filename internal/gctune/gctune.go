package gctune

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// MinPercent is the lowest GOGC the tuner sets: below it a live heap far
// above the headroom would be collected almost without pause.
const MinPercent = 10

// DefaultCeiling is the highest GOGC WithCeiling callers are advised to
// let the tuner set when the user has not chosen a GOGC: a live heap
// smaller than a quarter of the headroom grows to at most five times its
// size between collections (10 MB to 50 MB), one between that and the
// headroom gets the whole headroom.
const DefaultCeiling = 400

// DefaultInterval is how often the tuner looks for a finished cycle.
const DefaultInterval = 100 * time.Millisecond

// Percent is the GOGC that lets the heap grow by headroom bytes over live
// bytes, within [MinPercent, ceiling] (the process's own GOGC, or WithCeiling's).
func Percent(live, headroom uint64, ceiling int) int {
	if live == 0 || headroom*100/live >= uint64(ceiling) {
		return ceiling
	}
	return max(int(headroom*100/live), min(MinPercent, ceiling))
}

// Option configures Start.
type Option func(*tuner)

// WithCeiling sets the highest GOGC the tuner sets (default: the GOGC the
// process had when Start was called). Above the process's GOGC it lets a
// small heap have the whole headroom too, not only a large one: fewer
// collections for a little more memory. The process's GOGC is still what
// stop restores.
func WithCeiling(percent int) Option { return func(t *tuner) { t.ceiling = percent } }

// WithInterval sets how often the tuner looks for a finished cycle.
func WithInterval(d time.Duration) Option { return func(t *tuner) { t.interval = d } }

// WithLogger sets the logger of the tuner's changes (debug level).
func WithLogger(l *slog.Logger) Option { return func(t *tuner) { t.log = l } }

type tuner struct {
	headroom uint64
	ceiling  int // 0: the process's GOGC
	interval time.Duration
	log      *slog.Logger
}

const (
	metricCycles = "/gc/cycles/total:gc-cycles"
	metricLive   = "/gc/heap/live:bytes"
	metricGOGC   = "/gc/gogc:percent"
)

// Start tunes GOGC after every collection until ctx ends or stop is
// called; stop waits for the tuner to end and restores the GOGC the
// process had. With headroom 0, or with the collector off (GOGC=off), it
// does nothing. The setting is the process's: run one tuner per process.
func Start(ctx context.Context, headroom uint64, opts ...Option) (stop func()) {
	t := &tuner{headroom: headroom, interval: DefaultInterval, log: slog.Default()}
	for _, o := range opts {
		o(t)
	}
	samples := []metrics.Sample{{Name: metricGOGC}}
	metrics.Read(samples)
	if headroom == 0 || samples[0].Value.Kind() != metrics.KindUint64 {
		return func() {}
	}
	started := int(samples[0].Value.Uint64())
	if started <= 0 { // GOGC=off
		return func() {}
	}
	ceiling := started
	if t.ceiling > 0 {
		ceiling = t.ceiling
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.run(ctx, started, ceiling)
	}()
	return func() {
		cancel()
		<-done
		debug.SetGCPercent(started)
	}
}

// run sets GOGC from the live heap of each finished cycle.
func (t *tuner) run(ctx context.Context, current, ceiling int) {
	samples := []metrics.Sample{{Name: metricCycles}, {Name: metricLive}}
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	var seen uint64
	for {
		metrics.Read(samples)
		if cycles := samples[0].Value.Uint64(); cycles != seen {
			seen = cycles
			live := samples[1].Value.Uint64()
			if p := Percent(live, t.headroom, ceiling); p != current {
				debug.SetGCPercent(p)
				t.log.Debug("GOGC set for the live heap", "gogc", p, "live_mb", live>>20, "headroom_mb", t.headroom>>20)
				current = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
