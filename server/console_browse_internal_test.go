package server

import (
	"net/url"
	"testing"
)

func TestPaginate(t *testing.T) {
	for _, tc := range []struct {
		name            string
		query           string
		n               int
		page, lo, hi    int
		prev, next      string
		from, to, pages int
	}{
		{"empty", "", 0, 1, 0, 0, "", "", 0, 0, 1},
		{"one page", "kind=memory", 7, 1, 0, 7, "", "", 1, 7, 1},
		{"first of three", "kind=memory", 45, 1, 0, 20, "", "/ui/items?kind=memory&page=2", 1, 20, 3},
		{"middle keeps the filter", "kind=memory&page=2&tag=", 45, 2, 20, 40, "/ui/items?kind=memory&page=1", "/ui/items?kind=memory&page=3", 21, 40, 3},
		{"last", "page=3", 45, 3, 40, 45, "/ui/items?page=2", "", 41, 45, 3},
		{"past the end is the last", "page=9", 45, 3, 40, 45, "/ui/items?page=2", "", 41, 45, 3},
		{"not a number is the first", "page=x", 45, 1, 0, 20, "", "/ui/items?page=2", 1, 20, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			p, lo, hi := paginate(q, "/ui/items", tc.n, false)
			if p.Page != tc.page || lo != tc.lo || hi != tc.hi || p.Prev != tc.prev || p.Next != tc.next || p.From != tc.from || p.To != tc.to || p.Pages != tc.pages {
				t.Errorf("paginate(%q, %d) = %+v, %d, %d", tc.query, tc.n, p, lo, hi)
			}
		})
	}
}
