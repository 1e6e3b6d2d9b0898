package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/store/storetest"
)

// A write whose embedding races a learning keeps its vector under the
// model that computed it, and EmbedMissingVectors re-embeds it with the
// new one.
func TestRelearnDuringWrite(t *testing.T) {
	storetest.RelearnDuringWrite(t, func(t *testing.T, e h4r.Embedder) storetest.VectorStore {
		return openAt(t, filepath.Join(t.TempDir(), "h4r.db"), sqlite.WithVectors(e))
	})
}
