package timeref_test

import (
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r/timeref"
)

// now is a Sunday afternoon.
var now = time.Date(2023, 6, 25, 13, 22, 0, 0, time.UTC)

func d(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, time.UTC) }

func TestFind(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		from, to time.Time
		phrase   string
	}{
		{"yesterday", "What did I eat yesterday?", d(2023, 6, 24), d(2023, 6, 25), "yesterday"},
		{"capitals", "YESTERDAY I said", d(2023, 6, 24), d(2023, 6, 25), "YESTERDAY"},
		{"day before yesterday", "the day before yesterday", d(2023, 6, 23), d(2023, 6, 24), "the day before yesterday"},
		{"today", "what did I plan today", d(2023, 6, 25), d(2023, 6, 26), "today"},
		{"days ago in digits", "3 days ago", d(2023, 6, 22), d(2023, 6, 23), "3 days ago"},
		{"weeks ago centred", "what did I cook two weeks ago", now.AddDate(0, 0, -14).Add(-84 * time.Hour), now.AddDate(0, 0, -14).Add(84 * time.Hour), "two weeks ago"},
		{"a month ago", "a month ago", time.Date(2023, 5, 10, 1, 22, 0, 0, time.UTC), time.Date(2023, 6, 10, 1, 22, 0, 0, time.UTC), "a month ago"},
		{"a couple of days ago", "a couple of days ago", d(2023, 6, 23), d(2023, 6, 24), "a couple of days ago"},
		{"last may", "the trip I took last May", d(2023, 5, 1), d(2023, 6, 1), "last May"},
		{"last june asked in june", "last June", d(2022, 6, 1), d(2022, 7, 1), "last June"},
		{"in march is this year", "in March", d(2023, 3, 1), d(2023, 4, 1), "in March"},
		{"in august is last year", "in August", d(2022, 8, 1), d(2022, 9, 1), "in August"},
		{"month and year", "in March 2023", d(2023, 3, 1), d(2023, 4, 1), "in March 2023"},
		{"abbreviated month and year", "Dec 2022", d(2022, 12, 1), d(2023, 1, 1), "Dec 2022"},
		{"full date", "on May 5, 2023", d(2023, 5, 5), d(2023, 5, 6), "May 5, 2023"},
		{"day month year", "the 14th of February 2023", d(2023, 2, 14), d(2023, 2, 15), "14th of February 2023"},
		{"iso date", "on 2023-05-14 I", d(2023, 5, 14), d(2023, 5, 15), "2023-05-14"},
		{"month day without year", "on July 4", d(2022, 7, 4), d(2022, 7, 5), "on July 4"},
		{"ordinal of month", "the 3rd of June", d(2023, 6, 3), d(2023, 6, 4), "the 3rd of June"},
		{"last week is the calendar week", "last week", d(2023, 6, 12), d(2023, 6, 19), "last week"},
		{"this month", "this month", d(2023, 6, 1), d(2023, 7, 1), "this month"},
		{"last year", "last year", d(2022, 1, 1), d(2023, 1, 1), "last year"},
		{"past month runs to now", "over the past month", now.AddDate(0, -1, 0), now.Add(time.Nanosecond), "past month"},
		{"in the last days", "in the last 10 days", now.AddDate(0, 0, -10), now.Add(time.Nanosecond), "in the last 10 days"},
		{"last friday", "last Friday", d(2023, 6, 23), d(2023, 6, 24), "last Friday"},
		{"on sunday asked on sunday", "on Sunday", d(2023, 6, 18), d(2023, 6, 19), "on Sunday"},
		{"in a year", "in 2022", d(2022, 1, 1), d(2023, 1, 1), "in 2022"},
		{"since a year", "since 2022", d(2022, 1, 1), now.Add(time.Nanosecond), "since 2022"},
		{"first reference wins", "yesterday, not last May", d(2023, 6, 24), d(2023, 6, 25), "yesterday"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, ok := timeref.Find(tt.text, now)
			if !ok {
				t.Fatalf("Find(%q) found nothing", tt.text)
			}
			if !w.From.Equal(tt.from) || !w.To.Equal(tt.to) || w.Phrase != tt.phrase {
				t.Errorf("Find(%q) = [%s, %s) %q, want [%s, %s) %q", tt.text, w.From, w.To, w.Phrase, tt.from, tt.to, tt.phrase)
			}
		})
	}
}

func TestFindNothing(t *testing.T) {
	tests := []struct{ name, text string }{
		{"no time", "What is the name of my dog?"},
		{"may the verb", "May I ask what you think?"},
		{"may the verb before a number", "we may 3 times try"},
		{"in may is ambiguous", "things I keep in may be lost"},
		{"a day that does not exist", "February 30, 2023"},
		{"month 13", "2023-13-01"},
		{"a word inside another", "mayday marchers"},
		{"a count too large", "999 days ago"},
		{"other languages", "vor zwei Wochen"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w, ok := timeref.Find(tt.text, now); ok {
				t.Errorf("Find(%q) = [%s, %s) from %q, want nothing", tt.text, w.From, w.To, w.Phrase)
			}
		})
	}
}

func TestWindowStripAndContains(t *testing.T) {
	text := "what did I cook two weeks ago for dinner"
	w, ok := timeref.Find(text, now)
	if !ok {
		t.Fatal("no window")
	}
	if got, want := w.Strip(text), "what did I cook for dinner"; got != want {
		t.Errorf("Strip = %q, want %q", got, want)
	}
	if !w.Contains(now.AddDate(0, 0, -14)) || w.Contains(now) || w.Contains(w.To) || !w.Contains(w.From) {
		t.Errorf("Contains is not [From, To) for %s–%s", w.From, w.To)
	}
}

// Offsets are those of the text even when it holds multi-byte characters
// before the reference.
func TestFindOffsetsAfterUnicode(t *testing.T) {
	text := "Über café — yesterday"
	w, ok := timeref.Find(text, now)
	if !ok || text[w.Start:w.End] != "yesterday" {
		t.Fatalf("Find(%q) = %+v, %v", text, w, ok)
	}
}

func FuzzFind(f *testing.F) {
	for _, s := range []string{"yesterday", "on May 5, 2023", "two weeks ago", "last May", "2023-02-29", "the 31st of June 2023", "in the last 500 years", "ÄÖ last friday", strings.Repeat("last may ", 600)} {
		f.Add(s, int64(1687699320))
	}
	f.Fuzz(func(t *testing.T, text string, unix int64) {
		at := time.Unix(unix%(1<<35), 0)
		w, ok := timeref.Find(text, at)
		if !ok {
			return
		}
		if !w.From.Before(w.To) {
			t.Fatalf("Find(%q): empty window [%s, %s)", text, w.From, w.To)
		}
		if w.Start < 0 || w.End > len(text) || w.End > timeref.MaxTextBytes || w.Start >= w.End || text[w.Start:w.End] != w.Phrase {
			t.Fatalf("Find(%q): span %d–%d does not hold %q", text, w.Start, w.End, w.Phrase)
		}
		_ = w.Strip(text)
	})
}

// BenchmarkFind is the cost Find adds to every request with the
// conversation evidence on: a question of typical length, and one at the
// request limit with no time in it.
//
//	go test ./timeref -run '^$' -bench Find
func BenchmarkFind(b *testing.B) {
	for _, tt := range []struct{ name, text string }{
		{"question", "which park did I walk the puppy we adopted to two weeks ago"},
		{"4KiB without a time", strings.Repeat("the standard method of finding information in libraries ", 73)},
	} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				timeref.Find(tt.text, now)
			}
		})
	}
}
