package ingest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// listDirReadPatterns is listDir as it was before it read the ignore files
// during its own walk: go-git's ReadPatterns walks the tree first, then the
// files are listed. Kept as the reference the fast path must equal.
func listDirReadPatterns(t *testing.T, root string) []string {
	t.Helper()
	ps, err := gitignore.ReadPatterns(osfs.New(root), nil)
	if err != nil {
		t.Fatal(err)
	}
	ignore := gitignore.NewMatcher(ps)
	var out []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if d.IsDir() {
			if d.Name() == ".git" || ignore.Match(parts, true) {
				return fs.SkipDir
			}
			return nil
		}
		if !ignore.Match(parts, false) {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestListDirMatchesReadPatterns: listing with the ignore files read during
// the walk lists exactly the files the two-walk listing (ReadPatterns
// first) does, on trees with nested, negated, anchored and directory
// patterns, .git/info/exclude, and ignored folders holding ignore files of
// their own.
func TestListDirMatchesReadPatterns(t *testing.T) {
	files := []string{
		"README.md", "main.go", "app.log", "keep.log", "build/out.bin", "build/.gitignore",
		"docs/guide.md", "docs/draft.md", "docs/.gitignore", "docs/sub/notes.md", "docs/sub/tmp.txt",
		"docs/sub/.gitignore", "docs/sub/deep/x.tmp", "docs/sub/deep/y.md",
		"vendor/lib/a.go", "vendor/.gitignore", "src/gen/z.go", "src/gen/keep.go", "src/a.go",
		"src/.gitignore", "local.secret", "node_modules/pkg/index.js", "a/b/c/d/e.go", "a/.gitignore",
		".git/info/exclude", ".git/HEAD", "other/.git", "other/file.txt",
	}
	cases := []struct {
		name    string
		ignores map[string]string
	}{
		{"no ignore files", map[string]string{}},
		{"root patterns", map[string]string{".gitignore": "*.log\n!keep.log\nbuild/\nnode_modules\n"}},
		{"nested and negated", map[string]string{
			".gitignore": "# comment\n\n*.tmp\n", "docs/.gitignore": "draft.md\nsub/tmp.txt\n",
			"docs/sub/.gitignore": "!*.tmp\n", "src/.gitignore": "gen/*\n!gen/keep.go\n"}},
		{"ignored folder with its own ignore file", map[string]string{
			".gitignore": "vendor/\nbuild\n", "vendor/.gitignore": "!lib/\n", "build/.gitignore": "!out.bin\n"}},
		{"info exclude", map[string]string{".git/info/exclude": "local.secret\n/main.go\n"}},
		{"anchored and double star", map[string]string{".gitignore": "/README.md\n**/d/*.go\n", "a/.gitignore": "/b/c/nothing\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			all := slices.Clone(files)
			for f := range tc.ignores {
				if !slices.Contains(all, f) {
					all = append(all, f)
				}
			}
			for _, f := range all {
				content := "x\n"
				if c, ok := tc.ignores[f]; ok {
					content = c
				} else if strings.HasSuffix(f, ".gitignore") || strings.HasSuffix(f, "exclude") {
					content = ""
				}
				p := filepath.Join(root, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, issues, err := listDir(context.Background(), openRootT(t, root))
			if err != nil || len(issues) != 0 {
				t.Fatalf("listDir: %v %v", err, issues)
			}
			var names []string
			for _, f := range got {
				names = append(names, f.path)
			}
			want := listDirReadPatterns(t, root)
			slices.Sort(names)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Fatalf("listDir lists\n%v\nReadPatterns lists\n%v", names, want)
			}
			if len(tc.ignores) > 0 && len(want) >= len(all)-2 {
				t.Fatalf("the case ignores nothing, so it proves nothing: %v", want)
			}
		})
	}
}

// matchCredentialSlow is the credential test as path.Match states it.
func matchCredentialSlow(patterns []string, p string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, p); ok {
			return true
		}
		if ok, _ := path.Match(pat, path.Base(p)); ok {
			return true
		}
	}
	return false
}

// TestCredMatcherMatchesPathMatch: the credential matcher's shortcuts
// (literal names, "*suffix") answer as path.Match does, on the default
// patterns and on patterns with folders, classes and escapes in them.
func TestCredMatcherMatchesPathMatch(t *testing.T) {
	extra := []string{"*/id_rsa", "secrets/*.txt", "conf/prod.yaml", "key[0-9].bin", `\*star`, "*.", "*", "[", "*.pem/x"}
	paths := []string{
		".env", ".env.local", "a/.env", "a/b/.env.prod", "env", "x.pem", "dir/x.pem", "x.pem.bak", ".pem",
		"id_rsa", "home/id_rsa", "id_rsa.pub", "secrets/a.txt", "secrets/b/a.txt", "conf/prod.yaml",
		"other/conf/prod.yaml", "key1.bin", "keyA.bin", "*star", "a/*star", "file.", "main.go", "",
		"credentials.json", "x/credentials.json", "store.keystore", "cert.p12", "cert.pfx", "my.key", "id_ed25519",
	}
	for _, set := range []struct {
		name     string
		patterns []string
	}{
		{"default patterns", DefaultCredentialPatterns},
		{"default and unusual patterns", append(slices.Clone(DefaultCredentialPatterns), extra...)},
		{"only unusual patterns", extra[:len(extra)-3]},
	} {
		m := newCredMatcher(set.patterns)
		for _, p := range paths {
			t.Run(fmt.Sprintf("%s/%q", set.name, p), func(t *testing.T) {
				if got, want := m.match(p), matchCredentialSlow(set.patterns, p); got != want {
					t.Fatalf("match(%q) = %v, path.Match says %v", p, got, want)
				}
			})
		}
	}
}

// FuzzListDirMatchesReadPatterns: whatever two .gitignore files say (the
// root's and a subfolder's), listDir lists what the ReadPatterns listing
// does.
func FuzzListDirMatchesReadPatterns(f *testing.F) {
	f.Add("*.log\n!keep.log\n", "deep/\n")
	f.Add("sub/\n", "!x.md\n")
	f.Add("/a.md\n**/x.md\n", "*\n!deep\n")
	f.Add("# c\n\n\\#x\n", "[ab].md\n")
	tree := []string{"a.md", "b.log", "keep.log", "sub/x.md", "sub/y.log", "sub/deep/x.md", "sub/deep/z.txt", "other/x.md"}
	f.Fuzz(func(t *testing.T, rootIgnore, subIgnore string) {
		if len(rootIgnore)+len(subIgnore) > 4096 {
			return
		}
		root := t.TempDir()
		files := map[string]string{".gitignore": rootIgnore, "sub/.gitignore": subIgnore}
		for _, p := range tree {
			files[p] = "x\n"
		}
		for p, content := range files {
			full := filepath.Join(root, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, _, err := listDir(context.Background(), openRootT(t, root))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range got {
			names = append(names, f.path)
		}
		want := listDirReadPatterns(t, root)
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Fatalf("root %q, sub %q: listDir lists %v, ReadPatterns %v", rootIgnore, subIgnore, names, want)
		}
	})
}
