package sqlite

import (
	"fmt"
	"slices"
	"testing"

	"github.com/h4r/h4r"
)

// selectItem is a small item for the selective cache's tests.
func selectItem(id string) *h4r.Item {
	return &h4r.Item{ID: id, Text: "a note about " + id, Metadata: h4r.Metadata{Version: 1, ByteSize: 40}}
}

// readThrough looks ids up in c at generation 1, as readItems does, and
// keeps what lookupAll says to keep; it returns the ids it missed.
func readThrough(t *testing.T, c *itemCache, ids ...string) (missed []string) {
	t.Helper()
	out := map[string]*h4r.Item{}
	missing, keep, ok := c.lookupAll(1, ids, out)
	if !ok {
		t.Fatal("the cache is not at generation 1")
	}
	read := map[string]*h4r.Item{}
	for _, id := range missing {
		read[id] = selectItem(id)
	}
	c.putAll(1, keep, read)
	return missing
}

// TestItemCacheKeepsEveryReadWhileItFits: a cache that has never had to
// evict keeps each item the first read of it misses.
func TestItemCacheKeepsEveryReadWhileItFits(t *testing.T) {
	cache := newItemCache(1 << 20)
	c := &cache
	c.restart(1)
	if missed := readThrough(t, c, "a", "b"); !slices.Equal(missed, []string{"a", "b"}) {
		t.Fatalf("first read missed %v", missed)
	}
	if missed := readThrough(t, c, "a", "b"); len(missed) != 0 {
		t.Errorf("second read missed %v", missed)
	}
	if c.isSelective() {
		t.Error("a cache that never evicted is selective")
	}
}

// TestItemCacheBecomesSelectiveWhenItEvicts: the first eviction makes the
// cache selective, for good.
func TestItemCacheBecomesSelectiveWhenItEvicts(t *testing.T) {
	cache := newItemCache(16 << 10)
	c := &cache
	c.restart(1)
	for i := 0; !c.isSelective(); i++ {
		if i == 1000 {
			t.Fatal("1,000 items kept in a 16 KiB cache without evicting")
		}
		readThrough(t, c, fmt.Sprintf("i%d", i))
	}
	if c.used > c.budget {
		t.Errorf("used %d bytes of %d", c.used, c.budget)
	}
	c.restart(2)
	if !c.isSelective() {
		t.Error("restarting the cache made it keep everything again")
	}
}

// TestSelectiveCacheKeepsWhatIsReadAgain: in a selective cache, an item
// is kept at its second miss within a period, and an entry is dropped at
// the end of the first whole period in which no read found it. A period
// ends at the first keep after its lookups.
func TestSelectiveCacheKeepsWhatIsReadAgain(t *testing.T) {
	cache := newItemCache(1 << 20)
	c := &cache
	c.restart(1)
	c.sel.SetPeriod(5)
	c.beSelective()

	// The first period: a and b are read twice, c once. The second read
	// ends it, and a and b are kept in the second.
	if missed := readThrough(t, c, "a", "b", "c"); len(missed) != 3 || c.len() != 0 {
		t.Fatalf("first reads: missed %v, kept %d items; want every miss let go", missed, c.len())
	}
	if missed := readThrough(t, c, "a", "b"); len(missed) != 2 || c.len() != 2 {
		t.Fatalf("second reads: missed %v, kept %d items; want a and b kept", missed, c.len())
	}
	// The second period: a is found; c is missed again, but its first
	// miss was in the period before.
	if missed := readThrough(t, c, "a", "c", "x", "y", "z"); !slices.Equal(missed, []string{"c", "x", "y", "z"}) {
		t.Fatalf("reads of the second period missed %v", missed)
	}
	if c.len() != 2 {
		t.Fatalf("kept %d items through the second period, want a and b", c.len())
	}
	// The third period: a is found, b is not.
	readThrough(t, c, "a", "t", "u", "v", "w")
	if _, ok := c.lookup("a"); !ok {
		t.Error("an entry read in every period was dropped")
	}
	if _, ok := c.lookup("b"); ok {
		t.Error("an entry no read found during a whole period outlived it")
	}
	if _, ok := c.lookup("c"); ok {
		t.Error("an item missed once in each of two periods was kept")
	}
	var sum int64
	for _, e := range c.items {
		sum += e.size
	}
	if sum != c.used {
		t.Errorf("entries hold %d bytes, the count says %d", sum, c.used)
	}
}

// TestSelectiveCacheStaysSmallUnderSpreadReads: reads spread evenly over
// many more items than a selective cache can hold leave it holding few,
// and reads that come back to some items keep those.
func TestSelectiveCacheStaysSmallUnderSpreadReads(t *testing.T) {
	const items, reads = 20000, 200000
	cache := newItemCache(4 << 20) // room for about 7,000 of these items
	c := &cache
	c.restart(1)
	c.sel.SetPeriod(20000)
	c.beSelective()
	hot := 0
	for i := range reads {
		id := fmt.Sprintf("i%d", (i*7919)%items) // every item, evenly
		if i%4 == 0 {
			id = fmt.Sprintf("hot%d", hot%50)
			hot++
		}
		readThrough(t, c, id)
	}
	n := c.len()
	for i := range 50 {
		if _, ok := c.lookup(fmt.Sprintf("hot%d", i)); !ok {
			t.Errorf("hot%d, read every 200 reads, is not kept", i)
		}
	}
	// Each spread item is read once every 26,667 reads, less often than
	// once a period: hardly any should be kept.
	if n > 50+items/20 {
		t.Errorf("kept %d items; want the 50 read often and few of the %d read seldom", n, items)
	}
}
