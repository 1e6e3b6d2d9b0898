package itemcache

import (
	"fmt"
	"slices"
	"testing"
)

// readThrough looks ids up in c at version 1, as a store's read does, and
// puts each missed item Get said to keep; it returns the ids it missed.
func readThrough(c *Cache, ids ...string) (missed []string) {
	for _, id := range ids {
		it := item(id, 1)
		if _, ok, keep := c.Get(id, StampOf(it)); !ok {
			missed = append(missed, id)
			if keep {
				c.Put(it)
			}
		}
	}
	return missed
}

// checkBytes fails t when the count of bytes is not the entries'.
func checkBytes(t *testing.T, c *Cache) {
	t.Helper()
	var sum int64
	for _, e := range c.items {
		sum += e.size
	}
	if sum != c.used {
		t.Errorf("entries hold %d bytes, the count says %d", sum, c.used)
	}
}

// A cache that has never had to evict keeps each item the first read of
// it misses.
func TestKeepsEveryReadWhileItFits(t *testing.T) {
	c := New(1 << 20)
	if missed := readThrough(c, "a", "b"); !slices.Equal(missed, []string{"a", "b"}) {
		t.Fatalf("first read missed %v", missed)
	}
	if missed := readThrough(c, "a", "b"); len(missed) != 0 {
		t.Errorf("second read missed %v", missed)
	}
	if c.Stats().Selective {
		t.Error("a cache that never evicted is selective")
	}
}

// The first eviction makes the cache selective, for good: an item read
// once after it is let go.
func TestBecomesSelectiveWhenItEvicts(t *testing.T) {
	c := New(16 << 10)
	for i := 0; !c.Stats().Selective; i++ {
		if i == 1000 {
			t.Fatal("1,000 items kept in a 16 KiB cache without evicting")
		}
		readThrough(c, fmt.Sprintf("i%d", i))
	}
	before := c.Len()
	readThrough(c, "once")
	if _, ok, _ := c.Get("once", StampOf(item("once", 1))); ok {
		t.Error("a selective cache kept an item at its first miss")
	}
	if c.Len() > before || !c.Stats().Selective {
		t.Errorf("after a first miss: %d items (from %d), selective %v", c.Len(), before, c.Stats().Selective)
	}
	checkBytes(t, c)
}

// A selective cache keeps an item at its second miss in a period, and
// drops the entries no read found during a whole period.
func TestSelectiveKeepsWhatIsReadAgain(t *testing.T) {
	c := New(1 << 20)
	c.sel.Begin()
	c.sel.SetPeriod(5)

	// The first period: a and b are missed twice, c once; the second
	// misses keep a and b (b's lookup ends the period, so b is kept in
	// the second).
	if missed := readThrough(c, "a", "b", "c"); len(missed) != 3 || c.Len() != 0 {
		t.Fatalf("first reads: missed %v, kept %d items; want every miss let go", missed, c.Len())
	}
	if missed := readThrough(c, "a", "b"); len(missed) != 2 || c.Len() != 2 {
		t.Fatalf("second reads: missed %v, kept %d items; want a and b kept", missed, c.Len())
	}
	// The second period: a is found; c is missed again, but its first
	// miss was in the period before.
	if missed := readThrough(c, "a", "c", "x", "y", "z"); !slices.Equal(missed, []string{"c", "x", "y", "z"}) {
		t.Fatalf("reads of the second period missed %v", missed)
	}
	if c.Len() != 2 {
		t.Fatalf("kept %d items through the second period, want a and b", c.Len())
	}
	// The third period: a is found, b is not.
	readThrough(c, "a", "t", "u", "v", "w")
	if _, ok, _ := c.Get("a", StampOf(item("a", 1))); !ok {
		t.Error("an entry read in every period was dropped")
	}
	if _, ok, _ := c.Get("b", StampOf(item("b", 1))); ok {
		t.Error("an entry no read found during a whole period outlived it")
	}
	if _, ok, _ := c.Get("c", StampOf(item("c", 1))); ok {
		t.Error("an item missed once in each of two periods was kept")
	}
	checkBytes(t, c)
}

// Reads spread evenly over many more items than a selective cache can
// hold leave it holding few, and reads that come back to some items keep
// those.
func TestSelectiveStaysSmallUnderSpreadReads(t *testing.T) {
	const items, reads = 20000, 200000
	c := New(4 << 20) // room for about 5,000 of these items (740 bytes each by Footprint)
	c.sel.Begin()
	c.sel.SetPeriod(20000)
	hot := 0
	for i := range reads {
		id := fmt.Sprintf("i%d", (i*7919)%items) // every item, evenly
		if i%4 == 0 {
			id = fmt.Sprintf("hot%d", hot%50)
			hot++
		}
		readThrough(c, id)
	}
	for i := range 50 {
		id := fmt.Sprintf("hot%d", i)
		if _, ok, _ := c.Get(id, StampOf(item(id, 1))); !ok {
			t.Errorf("%s, read every 200 reads, is not kept", id)
		}
	}
	if n := c.Len(); n > 2000 {
		t.Errorf("holds %d items under reads spread over %d; a cache keeping every read would hold thousands", n, items)
	}
	checkBytes(t, c)
}
