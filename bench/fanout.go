package bench

import (
	"context"
	"sync"
)

// fanOut calls do(i) for every i in [0, n) from workers goroutines at
// once, handing the indexes out in order, and returns when every call
// handed out has returned. It stops handing out when ctx ends.
func fanOut(ctx context.Context, n, workers int, do func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				do(i)
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
}
