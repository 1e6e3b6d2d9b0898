package trim

import (
	"slices"
	"testing"
)

// TestSpare: a slice with more than a sixteenth of its length to spare
// comes back as an equal copy with none; one with less, or none, comes
// back as itself; an empty one with room comes back nil.
func TestSpare(t *testing.T) {
	for _, tc := range []struct {
		name     string
		len, cap int
		copied   bool
	}{
		{"no room", 64, 64, false},
		{"a sixteenth of room", 64, 68, false},
		{"more than a sixteenth", 64, 69, true},
		{"twice the length", 1000, 2000, true},
		{"empty with room", 0, 8, true},
		{"nil", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s []int
			if tc.cap > 0 {
				s = make([]int, tc.len, tc.cap)
			}
			for i := range s {
				s[i] = i * 7
			}
			got := Spare(s)
			if !slices.Equal(got, s) {
				t.Fatalf("Spare changed the elements: %v, want %v", got, s)
			}
			same := cap(got) > 0 && cap(s) > 0 && &got[:1][0] == &s[:1][0]
			switch {
			case tc.copied && tc.len == 0 && got != nil:
				t.Errorf("an empty slice with room came back as %#v, want nil", got)
			case tc.copied && same:
				t.Errorf("length %d, capacity %d: not copied", tc.len, tc.cap)
			case tc.copied && cap(got) != len(got):
				t.Errorf("the copy has capacity %d for length %d", cap(got), len(got))
			case !tc.copied && cap(got) != cap(s):
				t.Errorf("length %d, capacity %d: copied, want the slice itself", tc.len, tc.cap)
			}
		})
	}
}
