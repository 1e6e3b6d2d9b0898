package idtable_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/h4r/h4r/internal/idtable"
)

// keys stands in for the caller's storage: the key of ref r is keys[r].
type keys []string

func (k *keys) of(r uint32) string { return (*k)[r] }

// op is one step of a scenario: add or delete key, or check it.
type op struct {
	kind string // "put", "delete", "get"
	key  string
}

// model runs ops on a table and on a map side by side and reports the
// first disagreement.
func model(t *testing.T, size int, ops []op) {
	t.Helper()
	var ks keys
	tab := idtable.New[uint32](size)
	want := map[string]uint32{}
	for step, o := range ops {
		switch o.kind {
		case "put":
			r, ok := want[o.key]
			if !ok {
				r = uint32(len(ks))
				ks = append(ks, o.key)
			}
			want[o.key] = r
			tab.Put(o.key, r, ks.of)
		case "delete":
			_, had := want[o.key]
			delete(want, o.key)
			if got := tab.Delete(o.key, ks.of); got != had {
				t.Fatalf("step %d: Delete(%q) = %v, want %v", step, o.key, got, had)
			}
		}
		if tab.Len() != len(want) {
			t.Fatalf("step %d (%s %q): Len %d, want %d", step, o.kind, o.key, tab.Len(), len(want))
		}
		r, ok := tab.Get(o.key, ks.of)
		if wr, wok := want[o.key]; ok != wok || (ok && r != wr) {
			t.Fatalf("step %d (%s %q): Get = %d, %v; want %d, %v", step, o.kind, o.key, r, ok, wr, wok)
		}
	}
	for k, wr := range want {
		if r, ok := tab.Get(k, ks.of); !ok || r != wr {
			t.Fatalf("at the end: Get(%q) = %d, %v; want %d", k, r, ok, wr)
		}
	}
}

func numbered(prefix string, from, to int) []op {
	var ops []op
	for i := from; i < to; i++ {
		ops = append(ops, op{"put", prefix + strconv.Itoa(i)})
	}
	return ops
}

func deleted(prefix string, from, to, step int) []op {
	var ops []op
	for i := from; i < to; i += step {
		ops = append(ops, op{"delete", prefix + strconv.Itoa(i)})
	}
	return ops
}

func TestTableAgreesWithMap(t *testing.T) {
	cat := func(parts ...[]op) []op {
		var all []op
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	tests := []struct {
		name string
		size int
		ops  []op
	}{
		{"empty table answers nothing", 0, []op{{"get", "a"}, {"delete", "a"}}},
		{"one key put twice keeps one entry", 0, []op{{"put", "a"}, {"put", "a"}, {"get", "a"}}},
		{"the empty string is a key", 0, []op{{"put", ""}, {"get", ""}, {"delete", ""}, {"get", ""}}},
		{"grows from zero through many doublings", 0, numbered("mem-", 0, 5000)},
		{"sized up front holds its keys", 5000, numbered("mem-", 0, 5000)},
		{"deleting every other key keeps the rest findable", 0,
			cat(numbered("k", 0, 2000), deleted("k", 0, 2000, 2))},
		{"deleting everything empties it", 0,
			cat(numbered("k", 0, 300), deleted("k", 0, 300, 1), []op{{"get", "k7"}})},
		{"keys come back after deletion", 0,
			cat(numbered("k", 0, 500), deleted("k", 0, 500, 3), numbered("k", 0, 500))},
		{"deleting an absent key changes nothing", 0,
			cat(numbered("k", 0, 50), []op{{"delete", "absent"}, {"delete", "k50"}})},
		{"a nearly full table wraps its probes around the end", 12,
			cat(numbered("w", 0, 12), deleted("w", 0, 12, 5), numbered("v", 0, 4))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { model(t, tc.size, tc.ops) })
	}
}

func TestTableSize(t *testing.T) {
	// A million keys fit in 2^21 slots of 4 bytes: the figure doc.go gives.
	if got := idtable.New[uint32](1_000_000).Bytes(); got != 8<<20 {
		t.Errorf("Bytes for a million uint32 refs = %d, want %d", got, 8<<20)
	}
	if got := idtable.New[uint64](1_000_000).Bytes(); got != 16<<20 {
		t.Errorf("Bytes for a million uint64 refs = %d, want %d", got, 16<<20)
	}
}

// FuzzTable runs a program of bytes against a table and a map: each byte
// puts or deletes one of 64 keys (few, so that probes collide and runs
// shift), and the two must agree after every step.
func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 64 + 1, 4, 64 + 0, 1}, 0)
	f.Add([]byte{5, 5, 5, 64 + 5, 64 + 5}, 3)
	f.Fuzz(func(t *testing.T, prog []byte, size int) {
		if size < 0 || size > 1000 {
			return
		}
		ops := make([]op, len(prog))
		for i, b := range prog {
			kind := "put"
			if b&64 != 0 {
				kind = "delete"
			}
			ops[i] = op{kind, fmt.Sprintf("id-%d", b&63)}
		}
		model(t, size, ops)
	})
}

func BenchmarkGet(b *testing.B) {
	const n = 1_000_000
	ks := make(keys, n)
	tab := idtable.New[uint32](n)
	m := make(map[string]uint32, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("mem-%07d", i)
		tab.Add(ks[i], uint32(i), ks.of)
		m[ks[i]] = uint32(i)
	}
	b.Run("table", func(b *testing.B) {
		for i := range b.N {
			if _, ok := tab.Get(ks[i%n], ks.of); !ok {
				b.Fatal("missing")
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		for i := range b.N {
			if _, ok := m[ks[i%n]]; !ok {
				b.Fatal("missing")
			}
		}
	})
}
