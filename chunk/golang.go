package chunk

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// Go cuts Go source at its top-level declarations. The comments and blank
// lines before a declaration belong to it; the package clause, its doc and
// the imports make the first chunk, whose Refs are the import paths. A file
// that does not parse is cut by the code heuristic instead.
func (s *Splitter) Go(src string) []Chunk {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return s.Code(src)
	}
	ls := lines(src)
	line := func(p token.Pos) int { return fset.Position(p).Line } // 1-based
	var spans []span
	prev := 0 // lines before prev are taken
	var imports []string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			for _, sp := range g.Specs {
				if is, ok := sp.(*ast.ImportSpec); ok {
					if p, err := strconv.Unquote(is.Path.Value); err == nil {
						imports = append(imports, p)
					}
				}
			}
			continue
		}
		end := min(line(d.End()), len(ls))
		start := line(d.Pos()) - 1
		if doc := declDoc(d); doc != nil {
			start = line(doc.Pos()) - 1
		}
		if len(spans) == 0 && start > prev {
			// The package clause and imports, then this declaration.
			spans = append(spans, span{start: 0, end: start, decl: "package " + f.Name.Name, refs: imports})
			prev = start
		}
		if end <= prev {
			continue // on a line already taken (two declarations on one line)
		}
		spans = append(spans, span{start: prev, end: end, decl: declName(d)})
		prev = end
	}
	if len(spans) == 0 {
		spans = append(spans, span{start: 0, end: len(ls), decl: "package " + f.Name.Name, refs: imports})
	} else if prev < len(ls) {
		spans[len(spans)-1].end = len(ls) // trailing comments
	}
	return s.emit(ls, spans)
}

func declDoc(d ast.Decl) *ast.CommentGroup {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return d.Doc
	case *ast.GenDecl:
		return d.Doc
	}
	return nil
}

// declName names a declaration as a reader would look for it:
// "func (s *Slicer) Slice", "type Limits", "const (MaxBytes, …)".
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) > 0 {
			recv := exprString(d.Recv.List[0].Type)
			if len(d.Recv.List[0].Names) > 0 {
				recv = d.Recv.List[0].Names[0].Name + " " + recv
			}
			return fmt.Sprintf("func (%s) %s", recv, d.Name.Name)
		}
		return "func " + d.Name.Name
	case *ast.GenDecl:
		var names []string
		for _, sp := range d.Specs {
			switch sp := sp.(type) {
			case *ast.TypeSpec:
				names = append(names, sp.Name.Name)
			case *ast.ValueSpec:
				for _, n := range sp.Names {
					names = append(names, n.Name)
				}
			}
		}
		if len(names) > 4 {
			names = append(names[:4], "…")
		}
		return d.Tok.String() + " " + strings.Join(names, ", ")
	}
	return ""
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.IndexExpr:
		return exprString(e.X) + "[" + exprString(e.Index) + "]"
	case *ast.IndexListExpr:
		var ps []string
		for _, x := range e.Indices {
			ps = append(ps, exprString(x))
		}
		return exprString(e.X) + "[" + strings.Join(ps, ", ") + "]"
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return "?"
}
