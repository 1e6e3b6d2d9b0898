package names

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestListAgreesWithSlice appends strings of every length, empty ones
// among them, by both methods, and checks every string, kept views
// included, against a []string after each growth of the bytes.
func TestListAgreesWithSlice(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		grow int
	}{
		{"empty", 0, 0},
		{"one", 1, 0},
		{"many without Grow", 5000, 0},
		{"many after Grow", 5000, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), 3))
			var l List
			l.Grow(tc.grow)
			var want, views []string
			lastCap := -1
			for i := range tc.n {
				s := strings.Repeat(string(rune('a'+i%26)), rng.IntN(40)) + fmt.Sprint(i)
				if i%7 == 0 {
					s = ""
				}
				var got uint32
				if i%2 == 0 {
					got = l.Append(s)
				} else {
					b := []byte(s)
					got = l.AppendBytes(b)
					for j := range b { // the list keeps a copy
						b[j] = 'X'
					}
				}
				if got != uint32(i) {
					t.Fatalf("string %d got number %d", i, got)
				}
				want = append(want, s)
				views = append(views, l.At(got))
				if cap(l.bytes) != lastCap { // the bytes moved: check everything
					lastCap = cap(l.bytes)
					for j := range want {
						if l.At(uint32(j)) != want[j] || views[j] != want[j] {
							t.Fatalf("after %d appends, string %d is %q (a view kept: %q), want %q", i+1, j, l.At(uint32(j)), views[j], want[j])
						}
					}
				}
			}
			if l.Len() != tc.n {
				t.Fatalf("Len = %d, want %d", l.Len(), tc.n)
			}
			for j := range want {
				if l.At(uint32(j)) != want[j] || views[j] != want[j] {
					t.Fatalf("string %d is %q (a view kept: %q), want %q", j, l.At(uint32(j)), views[j], want[j])
				}
			}
		})
	}
}

// TestTrim: after appends, Trim leaves at most a sixteenth of spare room in
// either array; every string, and every view taken before, is unchanged,
// and appends after it work as before.
func TestTrim(t *testing.T) {
	var empty List
	empty.Trim()
	if empty.Len() != 0 || empty.bytes != nil || empty.end != nil {
		t.Fatalf("trimming an empty list: %+v", empty)
	}
	var l List
	var want, views []string
	check := func(when string) {
		t.Helper()
		for j := range want {
			if l.At(uint32(j)) != want[j] || views[j] != want[j] {
				t.Fatalf("%s, string %d is %q (a view kept: %q), want %q", when, j, l.At(uint32(j)), views[j], want[j])
			}
		}
	}
	add := func(n int) {
		for range n {
			s := fmt.Sprintf("mem-%07d", len(want))
			views = append(views, l.At(l.Append(s)))
			want = append(want, s)
		}
	}
	add(5000)
	for 16*(cap(l.bytes)-len(l.bytes)) <= len(l.bytes) { // up to the next growth of the bytes
		add(1)
	}
	l.Trim()
	for name, room := range map[string][2]int{"bytes": {len(l.bytes), cap(l.bytes)}, "end": {len(l.end), cap(l.end)}} {
		if 16*(room[1]-room[0]) > room[0] {
			t.Errorf("after Trim, %s holds %d with room for %d", name, room[0], room[1])
		}
	}
	check("after Trim")
	add(3000)
	check("after appending to a trimmed list")
}

// BenchmarkAt reads strings of a million ids of 11 bytes.
func BenchmarkAt(b *testing.B) {
	var l List
	l.Grow(1 << 20)
	for i := range 1 << 20 {
		l.Append(fmt.Sprintf("item-%06d", i))
	}
	i := uint32(0)
	n := 0
	for b.Loop() {
		n += len(l.At(i))
		i = (i + 7919) & (1<<20 - 1)
	}
	if n == 0 {
		b.Fatal("read nothing")
	}
}
