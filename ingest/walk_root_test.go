package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// openRootT opens dir as listDir's root, closed when the test ends.
func openRootT(t testing.TB, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestListThenSwapIsRefused: a file listed as a regular file and then,
// before it is read, replaced by something that leads out of the root or
// is not a file (the time-of-check to time-of-use race of a tree someone
// else can write), is refused when read: the outside file's bytes are
// never returned.
func TestListThenSwapIsRefused(t *testing.T) {
	const outsideText = "OUTSIDE-SECRET"
	cases := []struct {
		name string
		swap func(t *testing.T, p, outsideFile, outsideDir string)
	}{
		{"absolute symlink to an outside file", func(t *testing.T, p, outsideFile, _ string) {
			mustSymlink(t, outsideFile, p)
		}},
		{"relative symlink to an outside file", func(t *testing.T, p, outsideFile, _ string) {
			rel, err := filepath.Rel(filepath.Dir(p), outsideFile)
			if err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, rel, p)
		}},
		{"folder swapped for a symlink to an outside folder", func(t *testing.T, p, _, outsideDir string) {
			dir := filepath.Dir(p)
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outsideDir, dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO", func(t *testing.T, p, _, _ string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "root")
			outsideDir := filepath.Join(base, "outside")
			for _, d := range []string{filepath.Join(root, "docs"), outsideDir} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			outsideFile := filepath.Join(outsideDir, "notes.md")
			if err := os.WriteFile(outsideFile, []byte(outsideText), 0o644); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, "docs", "notes.md")
			if err := os.WriteFile(p, []byte("inside, as listed"), 0o644); err != nil {
				t.Fatal(err)
			}
			files, issues, err := listDir(context.Background(), openRootT(t, root))
			if err != nil || len(issues) != 0 || len(files) != 1 || files[0].path != "docs/notes.md" {
				t.Fatalf("listDir = %v, %v, %v", files, issues, err)
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			c.swap(t, p, outsideFile, outsideDir)
			b, err := files[0].read()
			if err == nil || strings.Contains(string(b), outsideText) {
				t.Fatalf("read after the swap = %q, %v; want a refusal", b, err)
			}
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
