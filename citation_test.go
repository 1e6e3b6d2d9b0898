package h4r

import (
	"reflect"
	"testing"
)

func TestCitationOf(t *testing.T) {
	cases := []struct {
		name  string
		extra map[string]any
		want  *Citation
	}{
		{"chunk of a file", map[string]any{"path": "scs/slicer.go", "sha": "abc", "line_range": []any{float64(3), float64(9)}},
			&Citation{Path: "scs/slicer.go", SHA: "abc", LineRange: []int{3, 9}, Score: 0.5}},
		{"page", map[string]any{"url": "https://x.test/a", "line_range": []any{1, 2}},
			&Citation{URL: "https://x.test/a", LineRange: []int{1, 2}, Score: 0.5}},
		{"bad line range dropped", map[string]any{"path": "a", "line_range": []any{"x", 2}},
			&Citation{Path: "a", Score: 0.5}},
		{"a memory cites nothing", map[string]any{"status": "failed"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CitationOf(Metadata{Extra: c.extra}, 0.5); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
