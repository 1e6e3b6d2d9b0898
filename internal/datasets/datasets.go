package datasets

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Root is the folder holding the datasets: $H4R_DATASETS when set, else
// shared/datasets beside the folder of the module's go.mod (found by
// walking up from the working directory, which go test sets to the
// package's folder).
func Root() (string, error) {
	if root := os.Getenv("H4R_DATASETS"); root != "" {
		return root, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the datasets: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(dir), "shared", "datasets"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("finding the datasets: no go.mod above the working directory; set H4R_DATASETS")
		}
		dir = parent
	}
}

// Dir returns the named dataset's folder. A dataset that is not there
// skips the test, or fails it when CI is set (CI must run it).
func Dir(tb testing.TB, name string) string {
	tb.Helper()
	root, err := Root()
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(filepath.Join(dir, "corpus.jsonl")); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("dataset %s not found under %s: %v", name, root, err)
		}
		tb.Skipf("dataset %s not found (%v): it lives in ../shared/datasets beside the project, or set H4R_DATASETS", name, err)
	}
	return dir
}
