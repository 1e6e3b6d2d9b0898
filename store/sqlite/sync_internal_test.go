package sqlite

import (
	"testing"

	"github.com/h4r/h4r"
)

// TestSyncMode: the writer's PRAGMA synchronous is what WithSync says
// (FULL by default: SQLite's 2, NORMAL's 1), and a mode of neither is
// refused naming it.
func TestSyncMode(t *testing.T) {
	cases := []struct {
		name string
		opts []Option
		want int
	}{
		{"default", nil, 2},
		{"full", []Option{WithSync(SyncFull)}, 2},
		{"normal", []Option{WithSync(SyncNormal)}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestStore(t, tc.opts...)
			var got int
			if err := s.writer.QueryRowContext(t.Context(), `PRAGMA synchronous`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("PRAGMA synchronous = %d, want %d", got, tc.want)
			}
		})
	}
	_, err := Open(t.Context(), t.TempDir()+"/h4r.db", WithSync("off"))
	if e, ok := err.(*h4r.Error); !ok || e.Code != h4r.EINVALID || e.Field != "sync" {
		t.Errorf("Open with sync off: %v, want invalid_argument naming sync", err)
	}
}
