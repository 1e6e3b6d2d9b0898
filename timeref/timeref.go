package timeref

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxTextBytes bounds the text Find looks at.
const MaxTextBytes = 4096

// Window is the span of time a question names: [From, To). Start and End
// are the byte offsets of the words that name it in the question, so that
// a caller can leave them out of the text it searches for.
type Window struct {
	From, To   time.Time
	Start, End int
	Phrase     string // the words that named it, as written
}

// Contains reports whether t lies in the window.
func (w Window) Contains(t time.Time) bool { return !t.Before(w.From) && t.Before(w.To) }

// Strip returns text without the words that named the window, with the
// spaces around them folded into one.
func (w Window) Strip(text string) string {
	if w.Start < 0 || w.End > len(text) || w.Start >= w.End {
		return text
	}
	return strings.Join(strings.Fields(text[:w.Start]+" "+text[w.End:]), " ")
}

var (
	monthNames = map[string]time.Month{
		"january": time.January, "jan": time.January, "february": time.February, "feb": time.February,
		"march": time.March, "mar": time.March, "april": time.April, "apr": time.April, "may": time.May,
		"june": time.June, "jun": time.June, "july": time.July, "jul": time.July, "august": time.August,
		"aug": time.August, "september": time.September, "sep": time.September, "sept": time.September,
		"october": time.October, "oct": time.October, "november": time.November, "nov": time.November,
		"december": time.December, "dec": time.December,
	}
	weekdays = map[string]time.Weekday{
		"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
		"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	}
	numberWords = map[string]int{
		"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
		"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3, "couple of": 2,
	}
)

const (
	monthRE   = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)`
	weekdayRE = `(sunday|monday|tuesday|wednesday|thursday|friday|saturday)`
	countRE   = `(\d{1,3}|a couple of|couple of|a few|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)`
	unitRE    = `(day|week|month|year)s?`
	dayRE     = `(\d{1,2})(?:st|nd|rd|th)?`
	yearRE    = `((?:19|20)\d\d)`
)

// rule is one way of naming a time: a pattern over the lower-cased
// question (word-bounded) and how its submatches become a window.
type rule struct {
	re     *regexp.Regexp
	window func(m []string, now time.Time) (from, to time.Time, ok bool)
}

func word(pattern string) *regexp.Regexp { return regexp.MustCompile(`\b` + pattern + `\b`) }

// rules are tried in order; more specific forms come first, so that "May
// 5, 2023" is a day and not the month of May.
var rules = []rule{
	{word(yearRE + `-(\d\d)-(\d\d)`), func(m []string, _ time.Time) (time.Time, time.Time, bool) {
		return day(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]))
	}},
	{word(monthRE + ` ` + dayRE + `,? ` + yearRE), func(m []string, _ time.Time) (time.Time, time.Time, bool) {
		return day(atoi(m[3]), monthNames[m[1]], atoi(m[2]))
	}},
	{word(dayRE + ` (?:of )?` + monthRE + `,? ` + yearRE), func(m []string, _ time.Time) (time.Time, time.Time, bool) {
		return day(atoi(m[3]), monthNames[m[2]], atoi(m[1]))
	}},
	{word(`(?:on )?` + monthRE + ` ` + dayRE), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		if m[1] == "may" && !strings.HasPrefix(m[0], "on ") {
			return time.Time{}, time.Time{}, false // "may 3" is as often the verb
		}
		return lastDay(monthNames[m[1]], atoi(m[2]), now)
	}},
	{word(`(?:on )?(?:the )?` + dayRE + ` of ` + monthRE), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		return lastDay(monthNames[m[2]], atoi(m[1]), now)
	}},
	{word(`(?:in )?` + monthRE + `,? (?:of )?` + yearRE), func(m []string, _ time.Time) (time.Time, time.Time, bool) {
		return month(atoi(m[2]), monthNames[m[1]])
	}},
	{word(`the day before yesterday`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		return dayOf(now.AddDate(0, 0, -2))
	}},
	{word(`yesterday`), func(_ []string, now time.Time) (time.Time, time.Time, bool) { return dayOf(now.AddDate(0, 0, -1)) }},
	{word(`(?:today|tonight|this morning|this afternoon|this evening)`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		return dayOf(now)
	}},
	{word(`(?:in |over |during )?the (?:last|past) ` + countRE + ` ` + unitRE), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		n, ok := count(m[1])
		if !ok {
			return time.Time{}, time.Time{}, false
		}
		return back(now, m[2], n), now.Add(time.Nanosecond), true
	}},
	{word(countRE + ` ` + unitRE + ` ago`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		n, ok := count(m[1])
		if !ok {
			return time.Time{}, time.Time{}, false
		}
		return ago(now, m[2], n)
	}},
	{word(`(last|this|past) (week|month|year)`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		return calendar(now, m[1], m[2])
	}},
	{word(`(?:last |on |this past )` + weekdayRE), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		return lastWeekday(now, weekdays[m[1]])
	}},
	{word(`(last|this|in|during|since) ` + monthRE), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		if m[2] == "may" && m[1] != "last" && m[1] != "this" {
			return time.Time{}, time.Time{}, false // "in may" is as often the verb as the month
		}
		from, to, ok := lastMonth(now, monthNames[m[2]], m[1] == "last")
		if m[1] == "since" && ok {
			to = now.Add(time.Nanosecond)
		}
		return from, to, ok
	}},
	{word(`(in|during|since) ` + yearRE), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		y := atoi(m[2])
		from, to := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)
		if m[1] == "since" {
			to = now.Add(time.Nanosecond)
		}
		return from, to, true
	}},
}

// Find returns the first time the question names, as a window relative to
// now (the moment it is asked, in UTC), and whether it names one. Of
// several, the one written first wins; where two overlap, the longer one.
func Find(text string, now time.Time) (Window, bool) {
	if len(text) > MaxTextBytes {
		text = text[:MaxTextBytes]
	}
	// Lower-casing keeps byte offsets only for ASCII; other bytes become
	// spaces, which no rule matches, so offsets stay those of text.
	lower := []byte(text)
	for i, c := range lower {
		switch {
		case c >= 'A' && c <= 'Z':
			lower[i] = c + 'a' - 'A'
		case c >= 0x80:
			lower[i] = ' '
		}
	}
	s := string(lower)
	now = now.UTC()
	// The rules run only around the words a reference to a time must hold,
	// segment by segment in text order, and stop at the first segment that
	// names a time: the first-written reference wins anyway, and a long
	// question without one costs a scan for those words, not every rule
	// over all of it.
	var found []Window
	scanned := 0
	for _, seg := range segments(s) {
		if scanned += seg[1] - seg[0]; scanned > maxScanBytes {
			break
		}
		part := s[seg[0]:seg[1]]
		for _, r := range rules {
			for _, loc := range r.re.FindAllStringSubmatchIndex(part, 4) {
				m := make([]string, len(loc)/2)
				for i := range m {
					if loc[2*i] >= 0 {
						m[i] = part[loc[2*i]:loc[2*i+1]]
					}
				}
				if from, to, ok := r.window(m, now); ok && from.Before(to) {
					start, end := seg[0]+loc[0], seg[0]+loc[1]
					found = append(found, Window{From: from, To: to, Start: start, End: end, Phrase: text[start:end]})
				}
			}
		}
		if len(found) > 0 {
			break
		}
	}
	if len(found) == 0 {
		return Window{}, false
	}
	// The first-written reference wins; of those overlapping it, the
	// longest ("on May 5, 2023" over "on May 5"), then the earlier rule.
	first := found[0]
	for _, w := range found[1:] {
		if w.Start < first.Start {
			first = w
		}
	}
	best := first
	for _, w := range found {
		if w.Start < first.End && w.End > first.Start && w.End-w.Start > best.End-best.Start {
			best = w
		}
	}
	return best, true
}

// maxScanBytes bounds the bytes the rules run over in one question.
const maxScanBytes = 1024

// reach is how far before and after a trigger word a reference may
// extend ("the day before yesterday", "a couple of days ago").
const reach = 32

// triggers are the words every reference holds one of; digits trigger
// too (years, days of the month, counts).
var triggers = func() map[string]bool {
	m := map[string]bool{"yesterday": true, "today": true, "tonight": true, "this": true, "ago": true, "last": true, "past": true}
	for w := range monthNames {
		m[w] = true
	}
	for w := range weekdays {
		m[w] = true
	}
	return m
}()

// segments returns the spans of lower (lower-cased ASCII, other bytes
// blanked) around trigger words, widened by reach to word boundaries and
// merged where they overlap, in text order.
func segments(lower string) [][2]int {
	var out [][2]int
	isLetter := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	for i := 0; i < len(lower); {
		if !isLetter(lower[i]) {
			i++
			continue
		}
		j := i
		for j < len(lower) && isLetter(lower[j]) {
			j++
		}
		word := lower[i:j]
		if triggers[word] || word[0] >= '0' && word[0] <= '9' {
			from, to := max(i-reach, 0), min(j+reach, len(lower))
			for from > 0 && isLetter(lower[from-1]) {
				from--
			}
			for to < len(lower) && isLetter(lower[to]) {
				to++
			}
			if n := len(out); n > 0 && from <= out[n-1][1] {
				out[n-1][1] = max(out[n-1][1], to)
			} else {
				out = append(out, [2]int{from, to})
			}
		}
		i = j
	}
	return out
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func count(s string) (int, bool) {
	if n, ok := numberWords[s]; ok {
		return n, true
	}
	n := atoi(s)
	return n, n > 0 && n <= 500
}

// day is the window of one calendar day, if it exists.
func day(y int, m time.Month, d int) (time.Time, time.Time, bool) {
	if m < time.January || m > time.December || d < 1 || d > 31 || y < 1900 || y > 2999 {
		return time.Time{}, time.Time{}, false
	}
	from := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	if from.Month() != m { // 31 June
		return time.Time{}, time.Time{}, false
	}
	return from, from.AddDate(0, 0, 1), true
}

func dayOf(t time.Time) (time.Time, time.Time, bool) { return day(t.Year(), t.Month(), t.Day()) }

func month(y int, m time.Month) (time.Time, time.Time, bool) {
	if m < time.January || m > time.December || y < 1900 || y > 2999 {
		return time.Time{}, time.Time{}, false
	}
	from := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	return from, from.AddDate(0, 1, 0), true
}

// lastDay is the latest day m/d that has begun by now.
func lastDay(m time.Month, d int, now time.Time) (time.Time, time.Time, bool) {
	from, to, ok := day(now.Year(), m, d)
	if ok && from.After(now) {
		from, to, ok = day(now.Year()-1, m, d)
	}
	return from, to, ok
}

// lastMonth is the latest month m that has begun by now; with strict
// ("last May" asked in May), the one before the current month.
func lastMonth(now time.Time, m time.Month, strict bool) (time.Time, time.Time, bool) {
	y := now.Year()
	if m > now.Month() || strict && m == now.Month() {
		y--
	}
	return month(y, m)
}

func unitSpan(t time.Time, unit string, n int) time.Time {
	switch unit {
	case "day":
		return t.AddDate(0, 0, n)
	case "week":
		return t.AddDate(0, 0, 7*n)
	case "month":
		return t.AddDate(0, n, 0)
	}
	return t.AddDate(n, 0, 0)
}

func back(now time.Time, unit string, n int) time.Time { return unitSpan(now, unit, -n) }

// ago is the unit that was n units before now: for days the calendar day,
// for longer units a span of one unit centred on that moment, since "two
// weeks ago" rarely means exactly fourteen days.
func ago(now time.Time, unit string, n int) (time.Time, time.Time, bool) {
	at := back(now, unit, n)
	if unit == "day" {
		return dayOf(at)
	}
	half := unitSpan(at, unit, 1).Sub(at) / 2
	return at.Add(-half), at.Add(half), true
}

// calendar is last/this/past week, month or year: calendar units (weeks
// start on Monday); "past" is the unit's length back from now.
func calendar(now time.Time, which, unit string) (time.Time, time.Time, bool) {
	if which == "past" {
		return back(now, unit, 1), now.Add(time.Nanosecond), true
	}
	d, _, _ := dayOf(now)
	var start time.Time
	switch unit {
	case "week":
		start = d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
	case "month":
		start = time.Date(d.Year(), d.Month(), 1, 0, 0, 0, 0, time.UTC)
	default:
		start = time.Date(d.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if which == "last" {
		return unitSpan(start, unit, -1), start, true
	}
	return start, unitSpan(start, unit, 1), true
}

// lastWeekday is the latest such weekday before today.
func lastWeekday(now time.Time, wd time.Weekday) (time.Time, time.Time, bool) {
	back := (int(now.Weekday()) - int(wd) + 7) % 7
	if back == 0 {
		back = 7
	}
	return dayOf(now.AddDate(0, 0, -back))
}
