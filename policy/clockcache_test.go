package policy

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestClockCache walks one shard's ring through hits, expiry, updates and
// evictions, checking after each step which keys are there.
func TestClockCache(t *testing.T) {
	type step struct {
		op   string // add, get
		key  string
		now  int64
		want []string // keys present afterwards, at step's now
	}
	cases := []struct {
		name  string
		size  int
		steps []step
	}{
		{"a key added is found until it expires", 4, []step{
			{"add", "a", 0, []string{"a"}},
			{"get", "a", 9, []string{"a"}},
			{"get", "a", 10, nil},
		}},
		{"adding a present key renews it, and takes no room", 2, []step{
			{"add", "a", 0, []string{"a"}},
			{"add", "b", 1, []string{"a", "b"}},
			{"add", "a", 5, []string{"a", "b"}},
			{"get", "a", 12, []string{"a"}},
		}},
		{"the first unreferenced entry past the hand goes", 3, []step{
			{"add", "a", 0, nil},
			{"add", "b", 0, nil},
			{"add", "c", 0, []string{"a", "b", "c"}},
			{"get", "a", 0, nil},                     // a is referenced
			{"add", "d", 0, []string{"a", "c", "d"}}, // the hand clears a, takes b
			{"add", "e", 0, []string{"a", "d", "e"}}, // then c
		}},
		{"every entry referenced: the hand clears them all and takes the first", 2, []step{
			{"add", "a", 0, nil},
			{"add", "b", 0, nil},
			{"get", "a", 0, nil},
			{"get", "b", 0, nil},
			{"add", "c", 0, []string{"b", "c"}},
		}},
		{"an expired entry goes though referenced", 2, []step{
			{"add", "a", 0, nil},
			{"get", "a", 5, nil},
			{"add", "b", 8, nil},
			{"add", "c", 11, []string{"b", "c"}}, // a expired at 10
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const ttl = 10
			c := newClockCacheOf[string, int](tc.size, 1, ttl, hashString)
			all := map[string]bool{}
			for i, st := range tc.steps {
				all[st.key] = true
				switch st.op {
				case "add":
					c.add(st.key, i, st.now)
				case "get":
					c.get(st.key, st.now)
				}
				if st.want == nil {
					continue
				}
				var got []string
				for k := range all {
					// Look without marking: a get would change what the
					// next step evicts.
					s := c.shard(hashString(k))
					if at, ok := s.at[hashString(k)]; ok && s.ring[at].key == k && st.now < s.ring[at].expires {
						got = append(got, k)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, st.want) {
					t.Fatalf("step %d (%s %s at %d): present %v, want %v", i, st.op, st.key, st.now, got, st.want)
				}
				if n := c.len(); n > tc.size {
					t.Fatalf("step %d: %d entries, more than %d", i, n, tc.size)
				}
			}
		})
	}
}

// TestClockCacheValues: get returns the value last added for the key,
// and purge empties the cache. (The size leaves room for the keys however
// they hash: each shard holds a share of it.)
func TestClockCacheValues(t *testing.T) {
	c := newClockCache[int, string](1000, 1000, hashInt)
	for i := range 100 {
		c.add(i, fmt.Sprint(i), 0)
	}
	c.add(7, "seven", 1)
	for i := range 100 {
		want := fmt.Sprint(i)
		if i == 7 {
			want = "seven"
		}
		if got, ok := c.get(i, 2); !ok || got != want {
			t.Fatalf("get(%d) = %q, %v; want %q", i, got, ok, want)
		}
	}
	if _, ok := c.get(1, 1000); ok {
		t.Fatal("get found an entry added at 0 at 1000, its time to live")
	}
	c.purge()
	if _, ok := c.get(1, 2); ok || c.len() != 0 {
		t.Fatalf("after purge: get found an entry, len %d", c.len())
	}
}

// TestClockCacheSharesSizeOut: however the size divides among shards,
// the cache holds at most size entries, and as many when full.
func TestClockCacheSharesSizeOut(t *testing.T) {
	for _, size := range []int{1, 2, 3, 17, 100, 1001} {
		c := newClockCache[int, int](size, 1000, hashInt)
		for i := range 10 * size {
			c.add(i, i, 0)
		}
		if n := c.len(); n != size {
			t.Errorf("size %d in %d shards: %d entries after %d adds", size, len(c.shards), n, 10*size)
		}
	}
}

// TestClockCacheSameHash: keys with one hash take each other's place,
// and are never answered with each other's values.
func TestClockCacheSameHash(t *testing.T) {
	c := newClockCache[string, int](10, 1000, func(string) uint64 { return 7 })
	c.add("a", 1, 0)
	if _, ok := c.get("b", 0); ok {
		t.Fatal("b was answered with a's value")
	}
	c.add("b", 2, 0)
	if v, ok := c.get("b", 0); !ok || v != 2 {
		t.Fatalf("get(b) = %d, %v; want 2", v, ok)
	}
	if _, ok := c.get("a", 0); ok {
		t.Fatal("a is still there, with b's hash taken")
	}
	if n := c.len(); n != 1 {
		t.Fatalf("%d entries, want 1", n)
	}
}

var testSeed = maphash.MakeSeed()

func hashString(s string) uint64 { return maphash.String(testSeed, s) }
func hashInt(i int) uint64       { return maphash.Comparable(testSeed, i) }

// TestClockCacheConcurrent is for the race detector: lookups mark
// entries under the read lock while adds evict.
func TestClockCacheConcurrent(t *testing.T) {
	c := newClockCache[int, int](64, 1000, hashInt)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 5000 {
				k := r.IntN(256)
				if v, ok := c.get(k, 1); ok && v != k {
					t.Errorf("get(%d) = %d", k, v)
					return
				}
				c.add(k, k, 0)
			}
		})
	}
	wg.Wait()
	if n := c.len(); n > 64 {
		t.Fatalf("%d entries, more than 64", n)
	}
}
