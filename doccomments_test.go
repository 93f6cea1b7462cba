package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocCommentsNameNoUnexported: the doc comments of the library's
// exported names (what go doc shows a user of a copy) name no unexported
// identifier of the package: no function, type, variable or constant whose
// name looks like code (camelCase, or followed by "("), and no unexported
// method or field written as Type.name. Plain words that happen to be
// identifiers too ("call", "job") are prose.
func TestDocCommentsNameNoUnexported(t *testing.T) {
	files := parseLibrary(t)
	unexported := map[string]bool{}         // top-level names
	members := map[string]map[string]bool{} // type: its unexported methods and fields
	addMember := func(typ, name string) {
		if members[typ] == nil {
			members[typ] = map[string]bool{}
		}
		members[typ][name] = true
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					if !d.Name.IsExported() {
						addMember(receiverType(d), d.Name.Name)
					}
				} else if !d.Name.IsExported() {
					unexported[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							unexported[s.Name.Name] = true
						}
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, n := range field.Names {
									if !n.IsExported() {
										addMember(s.Name.Name, n.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if !n.IsExported() && n.Name != "_" {
								unexported[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	ident := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?(\()?`)
	looksLikeCode := regexp.MustCompile(`[A-Z0-9_]`)
	check := func(file, what string, doc *ast.CommentGroup) {
		if doc == nil {
			return
		}
		text := doc.Text()
		for _, m := range ident.FindAllStringSubmatchIndex(text, -1) {
			word := text[m[0]:m[1]]
			call := strings.HasSuffix(word, "(")
			word = strings.TrimSuffix(word, "(")
			if typ, member, ok := strings.Cut(word, "."); ok {
				if members[typ][member] {
					t.Errorf("%s: the doc of %s names %s, which is unexported", file, what, word)
				}
				word = typ
			}
			if unexported[word] && (call || looksLikeCode.MatchString(word[1:])) {
				t.Errorf("%s: the doc of %s names %s, which is unexported", file, what, word)
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, d := range files[name].Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || ast.IsExported(receiverType(d))) {
					check(name, d.Name.Name, d.Doc)
				}
			case *ast.GenDecl:
				exportedSpec := ""
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						exportedSpec = s.Name.Name
						check(name, s.Name.Name, s.Doc)
						checkFields(s, func(field string, doc *ast.CommentGroup) { check(name, s.Name.Name+"."+field, doc) })
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								exportedSpec = n.Name
								check(name, n.Name, s.Doc)
								check(name, n.Name, s.Comment)
							}
						}
					}
				}
				if exportedSpec != "" {
					check(name, "the group of "+exportedSpec, d.Doc)
				}
			}
		}
	}
}

// checkFields calls check with the doc and line comments of each exported
// field of a struct type, and of each method of an interface type.
func checkFields(s *ast.TypeSpec, check func(name string, doc *ast.CommentGroup)) {
	var list *ast.FieldList
	switch typ := s.Type.(type) {
	case *ast.StructType:
		list = typ.Fields
	case *ast.InterfaceType:
		list = typ.Methods
	default:
		return
	}
	for _, field := range list.List {
		exported := len(field.Names) == 0 // an embedded type
		for _, n := range field.Names {
			exported = exported || n.IsExported()
		}
		if exported {
			name := "an embedded field"
			if len(field.Names) > 0 {
				name = field.Names[0].Name
			}
			check(name, field.Doc)
			check(name, field.Comment)
		}
	}
}

// receiverType is the name of a method's receiver type.
func receiverType(d *ast.FuncDecl) string {
	typ := d.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch typ := typ.(type) {
	case *ast.Ident:
		return typ.Name
	case *ast.IndexExpr:
		return typ.X.(*ast.Ident).Name
	case *ast.IndexListExpr:
		return typ.X.(*ast.Ident).Name
	}
	return ""
}

// parseLibrary parses the library's files (with their comments).
func parseLibrary(t *testing.T) map[string]*ast.File {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if libraryFile(e.Name()) {
			f, err := parser.ParseFile(fset, e.Name(), nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files[e.Name()] = f
		}
	}
	return files
}
