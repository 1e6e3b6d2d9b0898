package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/storetest"
)

// A write whose embedding races a learning keeps its vector under the
// model that computed it, and EmbedMissingVectors re-embeds it with the
// new one.
func TestRelearnDuringWrite(t *testing.T) {
	storetest.RelearnDuringWrite(t, func(t *testing.T, e h4r.Embedder) storetest.VectorStore {
		s := newStore(t, WithVectorPollInterval(100*time.Millisecond))
		s.EnableVectors(e)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.WarmVectors(ctx, e.Model()) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("WarmVectors: %v", err)
			}
		})
		waitReady(t, s)
		return s
	})
}
