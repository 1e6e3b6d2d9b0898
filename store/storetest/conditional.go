package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/h4r/h4r"
)

// testReplaceIf checks the conditional write: it happens only when the
// item is at the expected version (0: absent), a failed check writes and
// deletes nothing and wraps h4r.ErrVersionConflict, and concurrent
// read-modify-writes that retry on conflict lose no update.
func (s *suite) testReplaceIf(t *testing.T) {
	ctx := context.Background()
	st := s.open(t)
	steps := []struct {
		name     string
		check    h4r.VersionCheck
		text     string
		conflict bool
		want     string // the item's text after the step
		version  int    // and its version
	}{
		{"absent expected absent writes", h4r.VersionCheck{ID: "c"}, "one", false, "one", 1},
		{"absent expected present refused", h4r.VersionCheck{ID: "c", Version: 1}, "never", true, "one", 1},
		{"at the expected version writes", h4r.VersionCheck{ID: "c", Version: 1}, "two", false, "two", 2},
		{"a stale version is refused", h4r.VersionCheck{ID: "c", Version: 1}, "stale", true, "two", 2},
		{"present expected absent refused", h4r.VersionCheck{ID: "c"}, "stale", true, "two", 2},
	}
	for _, tc := range steps {
		t.Run(tc.name, func(t *testing.T) {
			upsert(t, st, textItem("other", "an item each write deletes"))
			if tc.name == "absent expected present refused" {
				// c exists now: check against an absent id instead.
				tc.check.ID = "absent"
			}
			_, err := st.ReplaceIf(ctx, tc.check, []h4r.Item{textItem(tc.check.ID, tc.text)}, []string{"other"})
			if tc.conflict != errors.Is(err, h4r.ErrVersionConflict) || (!tc.conflict && err != nil) {
				t.Fatalf("ReplaceIf: %v, want conflict %v", err, tc.conflict)
			}
			if tc.conflict {
				if _, err := st.Get(ctx, "other"); err != nil {
					t.Errorf("a refused write deleted an item: %v", err)
				}
				if _, err := st.Get(ctx, "absent"); h4r.ErrorCode(err) != h4r.ENOTFOUND {
					t.Errorf("a refused write wrote its item: %v", err)
				}
			}
			it, err := st.Get(ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			if it.Text != tc.want || it.Metadata.Version != tc.version {
				t.Errorf("c is %q at version %d, want %q at %d", it.Text, it.Metadata.Version, tc.want, tc.version)
			}
		})
	}
	t.Run("concurrent read-modify-writes lose nothing", func(t *testing.T) {
		const writers, each = 4, 5
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for range writers {
			wg.Go(func() {
				for range each {
					for {
						n, version := 0, 0
						it, err := st.Get(ctx, "counter")
						switch {
						case err == nil:
							version = it.Metadata.Version
							if _, err := fmt.Sscanf(it.Text, "count %d", &n); err != nil {
								errs <- err
								return
							}
						case h4r.ErrorCode(err) != h4r.ENOTFOUND:
							errs <- err
							return
						}
						_, err = st.ReplaceIf(ctx, h4r.VersionCheck{ID: "counter", Version: version}, []h4r.Item{textItem("counter", fmt.Sprintf("count %d", n+1))}, nil)
						if err == nil {
							break
						}
						if !errors.Is(err, h4r.ErrVersionConflict) {
							errs <- err
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		it, err := st.Get(ctx, "counter")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("count %d", writers*each); it.Text != want {
			t.Errorf("counter %q, want %q: updates were lost", it.Text, want)
		}
	})
}
