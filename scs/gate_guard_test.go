package scs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Whatever leaves H4R is built from items as the slicer cleared them
// (Cleared). Two calls hand out an item's fields without that: Permitted,
// which only says allow or deny, and (*h4r.Item).Delivered, the unredacted
// delivered form. These lists name the only packages (directories from the
// module root) that may call them; every other caller must take a Cleared.
var (
	// permittedCallers guard graph traversal with Permitted: no output is
	// built from the items it is asked about.
	permittedCallers = []string{
		"scs",    // defines it
		"engine", // the anchors of causal hops
	}
	// deliveredCallers build the delivered form of an item for redaction
	// (scs) or to measure and store it (the stores).
	deliveredCallers = []string{
		".",   // package h4r defines it
		"scs", // redacts it
		"store/sqlite",
		"store/postgres",
		"store/internal/sqlkit",
		"store/storetest",
	}
)

// gateViolations reports each call of Permitted or of a Delivered method
// without arguments in file (parsed from src) that dir may not make, as
// "file:line: what".
func gateViolations(fset *token.FileSet, dir, file string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			// Any use of Permitted, a method value included.
			if x.Sel.Name == "Permitted" && !slices.Contains(permittedCallers, dir) {
				out = append(out, fset.Position(x.Pos()).String()+": Permitted outside "+strings.Join(permittedCallers, ", ")+": build output from scs.Cleared (Slicer.Clear)")
			}
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if ok && sel.Sel.Name == "Delivered" && len(x.Args) == 0 && !slices.Contains(deliveredCallers, dir) {
				out = append(out, fset.Position(x.Pos()).String()+": (*h4r.Item).Delivered outside scs and the stores: deliver from scs.Cleared")
			}
		}
		return true
	})
	return out, nil
}

// TestOneGate: no package outside the lists above calls Permitted or
// (*h4r.Item).Delivered, so that no output is built from an item the
// slicer did not clear. Test files are not output and are not checked.
func TestOneGate(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	var bad []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		found, err := gateViolations(fset, filepath.ToSlash(dir), path, nil)
		if err != nil {
			return err
		}
		files++
		bad = append(bad, found...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("checked %d Go files under %s: the walk missed the module", files, root)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestOneGateCatchesTheConvention: the check finds the calls it exists
// for, and lets the listed packages make them.
func TestOneGateCatchesTheConvention(t *testing.T) {
	const src = `package x
func f(s S, it *h4r.Item) {
	_ = s.slicer.Permitted(ctx, spec, items)
	g := s.Permitted
	_ = it.Delivered()
	_ = v.Delivered // a field, not the call
	_ = c.Delivered(x)
}`
	tests := []struct {
		dir  string
		want int
	}{
		{"decision", 3},
		{"engine", 1},
		{"store/sqlite", 2},
		{"scs", 0},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			got, err := gateViolations(token.NewFileSet(), tt.dir, "x.go", src)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Errorf("%d findings %q, want %d", len(got), got, tt.want)
			}
		})
	}
}
