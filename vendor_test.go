package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// libraryFile reports whether a file of this directory is part of the
// vendorable library: every .go file but main.go, main_*.go (the command:
// its reference catalog, HTTP wiring and processors on stdio) and the tests.
func libraryFile(name string) bool {
	return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") &&
		name != "main.go" && !strings.HasPrefix(name, "main_")
}

// packageClause is the package clause of a file of this directory.
var packageClause = regexp.MustCompile(`(?m)^package main$`)

// copyLibrary copies the library files that keep selects into package pkg of
// a module of its own ("vendored", in a temporary directory it returns),
// renaming their package clause, as a user who vendors them would.
func copyLibrary(t *testing.T, pkg string, keep func(name string) bool) string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, pkg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module vendored\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, e := range entries {
		if e.IsDir() || !libraryFile(e.Name()) || !keep(e.Name()) {
			continue
		}
		src, err := os.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		clause := packageClause.FindIndex(src)
		if clause == nil {
			t.Fatalf("%s: no package main clause to rename", e.Name())
		}
		out := slices.Concat(src[:clause[0]], []byte("package "+pkg), src[clause[1]:])
		if err := os.WriteFile(filepath.Join(dir, pkg, e.Name()), out, 0o644); err != nil {
			t.Fatal(err)
		}
		copied++
	}
	if copied < 10 {
		t.Fatalf("copied %d library files; the filter is wrong", copied)
	}
	return dir
}

// goCommand runs the go command in dir, failing the test with its output.
func goCommand(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s of the vendored copy: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestLibraryFilesStandAlone copies the library files, and only them, into
// a module of their own with another package name, and builds and vets the
// copy: nothing in the library may depend on the command's files or on being
// package main. (TestCoreServesStdioAlone does the same for the core alone.)
func TestLibraryFilesStandAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a copy of the library")
	}
	dir := copyLibrary(t, "mcplib", func(string) bool { return true })
	for _, args := range [][]string{{"build", "./mcplib"}, {"vet", "./mcplib"}} {
		goCommand(t, dir, args...)
	}
}

// TestOnlyStdioFilesUseTheProcessStreams keeps the process's standard input
// and output to ServeStdio's files: no other library file, for any platform,
// names os.Stdin or os.Stdout (a transport takes an io.Reader and an
// io.Writer), so that no library code can write into the protocol stream.
func TestOnlyStdioFilesUseTheProcessStreams(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !libraryFile(name) || strings.HasPrefix(name, "stdio") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		osName := "" // what the file calls package os, if it imports it
		for _, imp := range f.Imports {
			if imp.Path.Value == `"os"` {
				osName = "os"
				if imp.Name != nil {
					osName = imp.Name.Name
				}
			}
		}
		if osName == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == osName && (sel.Sel.Name == "Stdin" || sel.Sel.Name == "Stdout") {
				t.Errorf("%s: os.%s outside the stdio*.go files (use ServeStdio, or take an io.Reader or io.Writer)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
