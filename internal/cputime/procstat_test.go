package cputime

import (
	"strings"
	"testing"
	"time"
)

// parseStat reads utime + stime past the command name, however the name
// is spelt, and names what is wrong with a line it cannot read.
func TestParseStat(t *testing.T) {
	const rest = " S 1 2 3 4 5 6 7 8 9 10 250 40 0 0 20 0 9 0 100 200 300"
	for _, tc := range []struct {
		name, line string
		want       time.Duration
		wantErr    string
	}{
		{"plain_name", "42 (h4r)" + rest, 2900 * time.Millisecond, ""},
		{"name_with_spaces_and_parens", "42 (h4r (serve) x)" + rest, 2900 * time.Millisecond, ""},
		{"zero_times", "42 (h4r) S 1 2 3 4 5 6 7 8 9 10 0 0", 0, ""},
		{"no_parentheses", "42 h4r" + rest, 0, "no command name"},
		{"too_few_fields", "42 (h4r) S 1 2 3", 0, "has 4 fields"},
		{"not_a_number", "42 (h4r) S 1 2 3 4 5 6 7 8 9 10 x 40", 0, `CPU time "x"`},
		{"negative", "42 (h4r) S 1 2 3 4 5 6 7 8 9 10 -5 40", 0, `CPU time "-5"`},
		{"out_of_range", "42 (h4r) S 1 2 3 4 5 6 7 8 9 10 9223372036854775807 40", 0, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.line))
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one naming %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Fatalf("%v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzParseStat: any line gives a CPU time of zero or more, or an error;
// never a panic.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (h4r) S 1 2 3 4 5 6 7 8 9 10 250 40 0"))
	f.Add([]byte("1 ()) S"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := parseStat(b); err == nil && d < 0 {
			t.Fatalf("negative CPU time %v", d)
		}
	})
}
