package paged

import (
	"encoding/binary"
	"maps"
	"math"
	"testing"
)

// An Array answers as a map from key to value does, for keys set,
// replaced, deleted and set to the zero value, on one page, across pages,
// past a gap of empty pages and at the largest key.
func TestArrayEqualsMap(t *testing.T) {
	type op struct {
		key uint32
		v   string // "": Delete
	}
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"empty", nil},
		{"one_key", []op{{1, "a"}}},
		{"key_zero", []op{{0, "a"}}},
		{"replaced", []op{{5, "a"}, {5, "b"}}},
		{"deleted", []op{{5, "a"}, {6, "b"}, {5, ""}}},
		{"deleted_never_set", []op{{5, ""}, {1 << 20, ""}}},
		{"page_edges", []op{{pageSize - 1, "a"}, {pageSize, "b"}, {2*pageSize - 1, "c"}}},
		{"gap_of_pages", []op{{3, "a"}, {50 * pageSize, "b"}, {7, "c"}}},
		{"largest_key", []op{{math.MaxUint32, "a"}, {1, "b"}, {math.MaxUint32, ""}}},
		{"set_again_after_delete", []op{{9, "a"}, {9, ""}, {9, "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a Array[string]
			want := map[uint32]string{}
			for _, o := range tc.ops {
				if o.v == "" {
					a.Delete(o.key)
					delete(want, o.key)
				} else {
					a.Set(o.key, o.v)
					want[o.key] = o.v
				}
			}
			check(t, &a, want)
			for _, probe := range []uint32{0, 2, pageSize + 1, 1 << 30, math.MaxUint32 - 1} {
				if got := a.Get(probe); got != want[probe] {
					t.Errorf("Get(%d) = %q, want %q", probe, got, want[probe])
				}
			}
		})
	}
}

// Set of the zero value deletes: the key holds nothing and no longer
// counts.
func TestSetZeroDeletes(t *testing.T) {
	var a Array[uint32]
	a.Set(7, 3)
	a.Set(7, 0)
	if a.Len() != 0 || a.Get(7) != 0 {
		t.Fatalf("after Set(7, 0): Len %d, Get %d; want 0, 0", a.Len(), a.Get(7))
	}
	for k, v := range a.All() {
		t.Fatalf("All yields %d=%d after Set(7, 0)", k, v)
	}
}

func check(t *testing.T, a *Array[string], want map[uint32]string) {
	t.Helper()
	for k, v := range want {
		if got := a.Get(k); got != v {
			t.Errorf("Get(%d) = %q, want %q", k, got, v)
		}
	}
	if got := maps.Collect(a.All()); !maps.Equal(got, want) {
		t.Errorf("All() = %v, want %v", got, want)
	}
	if a.Len() != len(want) {
		t.Errorf("Len() = %d, want %d", a.Len(), len(want))
	}
	var last int64 = -1
	for k := range a.All() {
		if int64(k) <= last {
			t.Fatalf("All() yields %d after %d: not by key", k, last)
		}
		last = int64(k)
	}
}

// FuzzArray: any sequence of sets and deletes leaves an Array answering
// as a map does. Each op is five bytes: a key (little endian, spread over
// eight pages) and a value byte, 0 meaning Delete.
func FuzzArray(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 'a', 1, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0x0f, 0, 0, 'a', 0, 0x10, 0, 0, 'b', 0xff, 0x0f, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var a Array[string]
		want := map[uint32]string{}
		for len(ops) >= 5 {
			key := binary.LittleEndian.Uint32(ops) % (8 * pageSize)
			if b := ops[4]; b == 0 {
				a.Delete(key)
				delete(want, key)
			} else {
				v := string(rune('a' + b%26))
				a.Set(key, v)
				want[key] = v
			}
			ops = ops[5:]
		}
		check(t, &a, want)
	})
}
