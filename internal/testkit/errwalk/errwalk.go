// Package errwalk lists the exported functions and methods of a package
// that return an error, so that a package's failure-mode test can check
// that it covers every one of them: a function added later without a
// failure case fails that test instead of going unchecked.
package errwalk

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"sort"
	"strings"
)

// ErrorFuncs returns the exported functions ("Name") and the exported
// methods of exported types ("Type.Name") declared in the non-test Go files
// of dir whose last result is an error, sorted.
func ErrorFuncs(dir string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("errwalk: %w", err)
	}
	var names []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				if name, ok := errorFunc(d); ok {
					names = append(names, name)
				}
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

func errorFunc(d ast.Decl) (string, bool) {
	fd, ok := d.(*ast.FuncDecl)
	if !ok || !fd.Name.IsExported() || fd.Type.Results == nil {
		return "", false
	}
	res := fd.Type.Results.List
	if id, ok := res[len(res)-1].Type.(*ast.Ident); !ok || id.Name != "error" {
		return "", false
	}
	if fd.Recv == nil {
		return fd.Name.Name, true
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	id, ok := t.(*ast.Ident)
	if !ok || !id.IsExported() {
		return "", false
	}
	return id.Name + "." + fd.Name.Name, true
}
