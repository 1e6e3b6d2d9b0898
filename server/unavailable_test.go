package server_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/sqlitetest"
	"github.com/h4r/h4r/server"
)

// A write that cannot get the store's writer within H4R_WRITE_TIMEOUT_MS
// (here another process holds the file's write lock) is answered 503
// unavailable with Retry-After, and nothing of it is written; reads go on
// meanwhile, and once the lock is free the same write lands.
func TestWritePastItsDeadlineIsUnavailable(t *testing.T) {
	var dataDir string
	s := newStackWith(t, func(c *config.Config) {
		dataDir = c.DataDir
		c.WriteTimeout = 200 * time.Millisecond
	})
	base := s.serve(t)

	release := sqlitetest.HoldWriteLock(t, filepath.Join(dataDir, "h4r.db"))

	item := `{"id": "busy-item", "text": "written while the store was busy"}`
	existing := fixtureItems(t)[0].ID
	writes := []struct {
		name, method, path, body string
	}{
		{"ingest", http.MethodPost, "/v1/items", item},
		{"delete", http.MethodDelete, "/v1/items/" + url.PathEscape(existing), ""},
	}
	for _, w := range writes {
		var body []byte
		if w.body != "" {
			body = []byte(w.body)
		}
		r := do(t, w.method, base+w.path, body)
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("%s: status %d (%s), want 503", w.name, r.status, r.body)
		}
		if e := checkErrorShape(t, r); e.Code != h4r.EUNAVAILABLE || !strings.Contains(e.Message, "busy") {
			t.Errorf("%s: error %+v, want unavailable saying the store is busy", w.name, e)
		}
		if got := r.header.Get("Retry-After"); got != strconv.Itoa(server.RetryAfterUnavailable) {
			t.Errorf("%s: Retry-After %q, want %d", w.name, got, server.RetryAfterUnavailable)
		}
	}
	// Reads answer while the writer is held.
	if r := do(t, http.MethodGet, base+"/v1/items/"+url.PathEscape(existing), nil); r.status != http.StatusOK {
		t.Errorf("get while the writer is held: status %d, want 200 (the delete must not have happened)", r.status)
	}
	if r := do(t, http.MethodGet, base+"/v1/items/busy-item", nil); r.status != http.StatusNotFound {
		t.Errorf("get of the refused item: status %d, want 404", r.status)
	}

	release()
	if r := post(t, base+"/v1/items", item); r.status != http.StatusOK {
		t.Errorf("the same ingest after the lock was released: status %d (%s), want 200", r.status, r.body)
	}
}
