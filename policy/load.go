package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/h4r/h4r"
)

// File is one Rego module of a policy. Name identifies it in errors (the
// path as given); Key, the path relative to the policy directory or bundle
// root, identifies it in the revision, so that the same policy has the
// same revision wherever it lives.
type File struct {
	Name   string
	Key    string
	Source string
}

// IsTest reports whether f is a Rego unit-test file (*_test.rego).
func (f File) IsTest() bool { return strings.HasSuffix(f.Key, "_test.rego") }

// IsBundle reports whether path names a bundle file (.tar.gz or .tgz, OPA's
// bundle format) rather than a directory.
func IsBundle(path string) bool {
	return strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz")
}

// Load reads a policy: every *.rego file under a directory (recursively,
// hidden files and directories skipped; symlinked files are read),
// or the modules and data of an OPA bundle (.tar.gz). Test files
// (*_test.rego) are included only when withTests is set. Files come back
// sorted by Key; data is the bundle's data document (nil for a directory).
func Load(path string, withTests bool) (files []File, data map[string]any, err error) {
	if IsBundle(path) {
		files, data, err = readBundle(path)
	} else {
		files, err = readPolicyDir(path)
	}
	if err != nil {
		return nil, nil, err
	}
	if !withTests {
		files = slices.DeleteFunc(files, File.IsTest)
	}
	if !slices.ContainsFunc(files, func(f File) bool { return !f.IsTest() }) {
		return nil, nil, h4r.Errorf(h4r.EINVALID, "policyDir", "policy %s holds no .rego files (besides tests)", path)
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Key, b.Key) })
	return files, data, nil
}

func readPolicyDir(dir string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// Hidden entries are skipped: Kubernetes mounts a ConfigMap as
		// symlinks into a hidden ..<timestamp> directory, which would
		// otherwise be read twice.
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(path, ".rego") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files = append(files, File{Name: path, Key: filepath.ToSlash(rel), Source: string(src)})
		return nil
	})
	if err != nil {
		return nil, h4r.Errorf(h4r.EINVALID, "policyDir", "reading policy directory %s: %v", dir, err)
	}
	return files, nil
}

// readBundle reads an OPA bundle with OPA's own reader. Modules are
// re-parsed by the caller, so that every policy reports errors alike; a
// bundle whose modules do not parse is reported with OPA's file:line.
func readBundle(path string) ([]File, map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, h4r.Errorf(h4r.EINVALID, "policyDir", "reading policy bundle %s: %v", path, err)
	}
	defer f.Close()
	b, err := bundle.NewReader(f).WithRegoVersion(ast.RegoV1).Read()
	if err != nil {
		var astErrs ast.Errors
		if errors.As(err, &astErrs) && len(astErrs) > 0 {
			for _, e := range astErrs {
				if e.Location != nil {
					e.Location.File = path + "/" + strings.TrimPrefix(e.Location.File, "/")
				}
			}
			return nil, nil, compileError(path, "reading policy bundle", astErrs)
		}
		return nil, nil, h4r.Errorf(h4r.EINVALID, "policyDir", "reading policy bundle %s: %v", path, err)
	}
	files := make([]File, 0, len(b.Modules))
	for _, m := range b.Modules {
		key := strings.TrimPrefix(m.Path, "/")
		files = append(files, File{Name: path + "/" + key, Key: key, Source: string(m.Raw)})
	}
	return files, b.Data, nil
}

// revision is a short sha256 over the modules' keys and sources and the
// data document: two engines with the same revision decide alike.
func revision(files []File, data map[string]any) string {
	h := sha256.New()
	for _, f := range files {
		h.Write([]byte(f.Key))
		h.Write([]byte{0})
		h.Write([]byte(f.Source))
		h.Write([]byte{0})
	}
	if len(data) > 0 {
		enc, _ := json.Marshal(data) // decoded JSON always encodes; map keys sorted
		h.Write(enc)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
