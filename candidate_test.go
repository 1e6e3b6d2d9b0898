package h4r_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/h4r/h4r"
)

func TestReadPresent(t *testing.T) {
	broken := errors.New("disk gone")
	get := func(_ context.Context, id string) (*h4r.Item, error) {
		switch id {
		case "gone":
			return nil, h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
		case "broken":
			return nil, broken
		}
		return &h4r.Item{ID: id}, nil
	}
	present, absent, err := h4r.ReadPresent(context.Background(), get, []string{"a", "gone", "b"})
	if err != nil || len(present) != 2 || present[0].ID != "a" || present[1].ID != "b" || !slices.Equal(absent, []string{"gone"}) {
		t.Errorf("ReadPresent = %v, %v, %v; want a and b present, gone absent", present, absent, err)
	}
	if _, _, err := h4r.ReadPresent(context.Background(), get, []string{"a", "broken"}); !errors.Is(err, broken) {
		t.Errorf("a store error was %v, want it returned wrapped", err)
	}
}

func TestHitLimit(t *testing.T) {
	tests := []struct {
		name       string
		limit, def int
		want       int
		wantErr    bool
	}{
		{"zero takes the default", 0, 100, 100, false},
		{"positive is kept", 7, 100, 7, false},
		{"negative is refused", -1, 100, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h4r.HitLimit(tt.limit, tt.def)
			if got != tt.want || (err != nil) != tt.wantErr || (err != nil && h4r.ErrorCode(err) != h4r.EINVALID) {
				t.Errorf("HitLimit(%d, %d) = %d, %v", tt.limit, tt.def, got, err)
			}
		})
	}
}
