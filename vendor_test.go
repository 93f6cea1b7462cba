package main

import (
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
// its reference catalog, HTTP wiring and stdio setup) and the tests.
func libraryFile(name string) bool {
	return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") &&
		name != "main.go" && !strings.HasPrefix(name, "main_")
}

// packageClause is the package clause of a file of this directory.
var packageClause = regexp.MustCompile(`(?m)^package main$`)

// TestLibraryFilesStandAlone copies the library files, and only them, into
// a module of their own with another package name, as a user who vendors
// them would, and builds and vets the copy: nothing in the library may
// depend on the command's files or on being package main.
func TestLibraryFilesStandAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a copy of the library")
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pkg := filepath.Join(dir, "mcplib")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module vendored\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, e := range entries {
		if e.IsDir() || !libraryFile(e.Name()) {
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
		out := slices.Concat(src[:clause[0]], []byte("package mcplib"), src[clause[1]:])
		if err := os.WriteFile(filepath.Join(pkg, e.Name()), out, 0o644); err != nil {
			t.Fatal(err)
		}
		copied++
	}
	if copied < 10 {
		t.Fatalf("copied %d library files; the filter is wrong", copied)
	}
	for _, args := range [][]string{{"build", "./mcplib"}, {"vet", "./mcplib"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s of the vendored copy: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
