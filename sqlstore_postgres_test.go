package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPostgresModuleLinksEveryRootFile: the postgres module's command is
// built from this directory's non-test files, linked into postgres/, with
// its own main_taskstore.go instead of this one's. A file added here and not
// linked there would break its build; postgres/relink.sh fixes the set.
func TestPostgresModuleLinksEveryRootFile(t *testing.T) {
	root, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range root {
		if !strings.HasSuffix(name, "_test.go") && name != "main_taskstore.go" {
			want = append(want, name)
		}
	}
	entries, err := os.ReadDir("postgres")
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		target, err := os.Readlink(filepath.Join("postgres", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if target != "../"+e.Name() {
			t.Errorf("postgres/%s links to %s, want ../%s", e.Name(), target, e.Name())
		}
		linked = append(linked, e.Name())
	}
	slices.Sort(want)
	slices.Sort(linked)
	if !slices.Equal(linked, want) {
		t.Fatalf("postgres/ links %v,\nwant every non-test file of the root but main_taskstore.go: %v\n(run postgres/relink.sh)", linked, want)
	}
	if _, err := os.Lstat("postgres/main_taskstore.go"); err != nil {
		t.Fatalf("postgres/main_taskstore.go, the command's PostgreSQL store: %v", err)
	}
}
