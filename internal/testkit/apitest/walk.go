package apitest

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
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
		return nil, fmt.Errorf("apitest: %w", err)
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

// Field is one leaf of a JSON request: its path as the request spells it
// ("config.clip_low") and its Go type.
type Field struct {
	Path string
	Type reflect.Type
}

// Leaf types: a struct type named here is a value of its own (a per-token
// field), not an object whose fields are walked.
var leafStructs = map[string]bool{"Tokens": true}

// unmarshaler is json.Unmarshaler: a struct that decodes itself (a
// number or a string, say) is a leaf too.
var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// JSONFields returns the leaf fields of the request type t, depth first in
// declaration order, skipping "op".
func JSONFields(t reflect.Type) []Field {
	var out []Field
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				// An embedded struct's fields are the object's own, as
				// encoding/json promotes them.
				walk(f.Type, prefix)
				continue
			}
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			path := name
			if prefix != "" {
				path = prefix + "." + name
			}
			if path == "op" {
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Struct && !leafStructs[ft.Name()] && !reflect.PointerTo(ft).Implements(unmarshaler) {
				walk(ft, path)
				continue
			}
			out = append(out, Field{Path: path, Type: ft})
		}
	}
	walk(t, "")
	return out
}
