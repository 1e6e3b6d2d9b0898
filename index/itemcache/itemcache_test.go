package itemcache

import (
	"fmt"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

func item(id string, version int) *h4r.Item {
	return &h4r.Item{ID: id, Text: "some text of an item", Metadata: h4r.Metadata{Version: version, ByteSize: 100, Tokens: 20}}
}

// Get answers an entry only at the stamp it was decoded with, and a copy
// with the row's counts when only they moved; the entry stays as it was.
func TestGetChecksTheStamp(t *testing.T) {
	c := New(1 << 20)
	stored := item("a", 3)
	c.Put(stored)
	at := StampOf(stored)
	later := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name     string
		stamp    Stamp
		wantHit  bool
		wantSame bool // the entry itself, not a copy
	}{
		{"same stamp", at, true, true},
		{"another version", Stamp{Version: 4, ByteSize: 100, Tokens: 20}, false, false},
		{"recounted tokens", Stamp{Version: 3, ByteSize: 100, Tokens: 21}, false, false},
		{"other size", Stamp{Version: 3, ByteSize: 101, Tokens: 20}, false, false},
		{"accessed", Stamp{Version: 3, ByteSize: 100, Tokens: 20, AccessCount: 2, LastAccessedAt: later}, true, false},
		{"unknown id", at, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "a"
			if tt.name == "unknown id" {
				id = "b"
			}
			before := c.Stats()
			got, ok, _ := c.Get(id, tt.stamp)
			if ok != tt.wantHit {
				t.Fatalf("hit %v, want %v", ok, tt.wantHit)
			}
			after := c.Stats()
			wantHits, wantMisses := uint64(0), uint64(1)
			if ok {
				wantHits, wantMisses = 1, 0
			}
			if after.Hits-before.Hits != wantHits || after.Misses-before.Misses != wantMisses {
				t.Errorf("stats went from %+v to %+v for a hit %v: want %d more hits and %d more misses", before, after, ok, wantHits, wantMisses)
			}
			if after.Items != 1 || after.Bytes != Footprint(stored) {
				t.Errorf("stats %+v, want the one entry of %d bytes", after, Footprint(stored))
			}
			if !ok {
				return
			}
			if (got == stored) != tt.wantSame {
				t.Errorf("returned the entry itself: %v, want %v", got == stored, tt.wantSame)
			}
			if !StampOf(got).Equal(tt.stamp) {
				t.Errorf("item at stamp %+v, want %+v", StampOf(got), tt.stamp)
			}
			if stored.Metadata.AccessCount != 0 || !stored.Metadata.LastAccessedAt.IsZero() {
				t.Error("the cached entry was modified")
			}
		})
	}
}

// The cache stays within its budget, and its count of bytes is its
// entries'.
func TestStaysWithinItsBudget(t *testing.T) {
	tests := []struct {
		name   string
		budget int64
		items  int
	}{
		{"off", 0, 100},
		{"under budget", 1 << 20, 100},
		{"over budget", 64 << 10, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(tt.budget)
			for i := range tt.items {
				c.Put(item(fmt.Sprintf("i%d", i), 1))
			}
			c.Drop("i0", "i1", "absent")
			if c.used > tt.budget {
				t.Errorf("used %d bytes, budget %d", c.used, tt.budget)
			}
			checkBytes(t, c)
			if tt.budget > 0 && c.Len() == 0 {
				t.Error("the cache kept nothing")
			}
			if tt.budget == 0 && (c.Len() != 0 || c.Enabled()) {
				t.Errorf("a cache of budget 0 holds %d items, enabled %v", c.Len(), c.Enabled())
			}
		})
	}
}
