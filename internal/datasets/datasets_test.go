package datasets_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/h4r/h4r/internal/datasets"
)

// Without H4R_DATASETS the root is shared/datasets beside the module's
// folder, whatever package folder the test runs in; with it, the variable.
func TestRoot(t *testing.T) {
	for _, tc := range []struct{ name, env, want string }{
		{"beside the module", "", filepath.Join("..", "..", "..", "shared", "datasets")},
		{"from the variable", "/data/beir", "/data/beir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("H4R_DATASETS", tc.env)
			got, err := datasets.Root()
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if !filepath.IsAbs(want) {
				wd, _ := os.Getwd()
				want = filepath.Join(wd, want) // internal/datasets → the module → beside it
			}
			if got != want {
				t.Errorf("Root() = %s, want %s", got, want)
			}
		})
	}
}
