package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A worker that finished a stage waits for the next and runs it: fifty
// stages, one after another, start one worker.
func TestWorkerRunsTheNextStage(t *testing.T) {
	w := newWorkers()
	var ran atomic.Int64
	stage := func(done chan struct{}) func() {
		return func() { ran.Add(1); close(done) }
	}
	first := make(chan struct{})
	w.Go(stage(first))
	<-first
	for range 49 {
		done := make(chan struct{})
		select {
		case w.idle <- stage(done): // taken only by a waiting worker
		case <-time.After(10 * time.Second):
			t.Fatal("no worker waits for a stage after finishing one")
		}
		<-done
	}
	if ran.Load() != 50 || w.started.Load() != 1 {
		t.Errorf("%d stages ran on %d workers, want 50 on 1", ran.Load(), w.started.Load())
	}
}

// Stages that run at once each get a worker of their own, and each runs
// once.
func TestWorkersGrowWithStagesAtOnce(t *testing.T) {
	w := newWorkers()
	var ran atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		w.Go(func() {
			defer wg.Done()
			ran.Add(1)
			<-release // none finishes before all have started
		})
	}
	close(release)
	wg.Wait()
	if ran.Load() != 8 || w.started.Load() != 8 {
		t.Errorf("%d stages ran on %d workers, want 8 on 8", ran.Load(), w.started.Load())
	}
}

// A nil *workers (an Engine not made by New) still runs the stage.
func TestNilWorkersRun(t *testing.T) {
	var w *workers
	done := make(chan struct{})
	w.Go(func() { close(done) })
	<-done
}
