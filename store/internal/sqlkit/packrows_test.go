package sqlkit

import (
	"errors"
	"slices"
	"testing"

	"github.com/h4r/h4r"
)

func TestRequest(t *testing.T) {
	tests := []struct {
		name string
		req  []byte
		want string
	}{
		{"none", nil, "{}"},
		{"empty", []byte{}, "{}"},
		{"as received", []byte(`{"query":{"text":"x"}}`), `{"query":{"text":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PackRequest(h4r.StoredPack{Request: tt.req}); got != tt.want {
				t.Errorf("PackRequest = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIDs(t *testing.T) {
	if got := PackIDs(nil); got == nil || len(got) != 0 {
		t.Errorf("PackIDs(nil) = %#v, want an empty list", got)
	}
	if got := PackIDs([]string{"a"}); !slices.Equal(got, []string{"a"}) {
		t.Errorf("PackIDs([a]) = %v", got)
	}
}

func TestNotFound(t *testing.T) {
	err := PackNotFound("p1")
	if err.Code != h4r.ENOTFOUND || err.Field != "context_pack_id" {
		t.Errorf("PackNotFound = %+v, want not_found naming context_pack_id", err)
	}
}

func TestVisitStopsAtFirstError(t *testing.T) {
	stop := errors.New("stop")
	var seen []string
	err := VisitFeedback([]h4r.Feedback{{PackID: "a"}, {PackID: "b"}, {PackID: "c"}}, func(f h4r.Feedback) error {
		seen = append(seen, f.PackID)
		if f.PackID == "b" {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !slices.Equal(seen, []string{"a", "b"}) {
		t.Errorf("VisitFeedback = %v after %v, want stop after [a b]", err, seen)
	}
}
