package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// coreFileList is where the core's files are listed
// (docs/explanation/contract.md, "Layers"): the one place, read by these tests
// and by copy.sh.
const coreFileList = "testdata/core_files.txt"

// corePatterns returns the globs of coreFileList.
func corePatterns(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(coreFileList)
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			if _, err := filepath.Match(line, ""); err != nil {
				t.Fatalf("%s: bad pattern %q: %v", coreFileList, line, err)
			}
			patterns = append(patterns, line)
		}
	}
	return patterns
}

// isCoreFile reports whether the library file name is one of the core's.
func isCoreFile(name string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { ok, _ := filepath.Match(p, name); return ok })
}

// featureOf is the feature a library file outside the core belongs to: its
// name up to the first '_' or '.' (http_session.go and http.go: "http").
func featureOf(name string) string {
	return name[:strings.IndexAny(name, "_.")]
}

// layer is where a file of the package stands: "core", "feature" or
// "command" (main.go, main_*.go).
func layer(name string, patterns []string) string {
	switch {
	case !libraryFile(name):
		return "command"
	case isCoreFile(name, patterns):
		return "core"
	}
	return "feature"
}

// importArrows type-checks the package's files (those this platform builds,
// tests left out) and returns its arrows: for each pair of distinct files
// (from, to), the package-level names (and the methods and fields) declared
// in to that from uses, sorted.
func importArrows(t testing.TB) map[[2]string][]string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(".", name); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("main", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	names := map[[2]string]map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || (obj.Parent() != nil && obj.Parent() != pkg.Scope()) {
			continue // another package's, or a local name
		}
		from, to := fset.Position(id.Pos()).Filename, fset.Position(obj.Pos()).Filename
		if from == to {
			continue
		}
		k := [2]string{from, to}
		if names[k] == nil {
			names[k] = map[string]bool{}
		}
		names[k][obj.Name()] = true
	}
	arrows := map[[2]string][]string{}
	for k, set := range names {
		for n := range set {
			arrows[k] = append(arrows[k], n)
		}
		slices.Sort(arrows[k])
	}
	return arrows
}

// TestCoreNamesNoFeature keeps the layers of docs/explanation/contract.md,
// "Layers": no file of the core uses a name (a type, function, variable,
// constant, method or field) declared in a feature's file. It logs the arrows
// between files by layer, which `go test -run TestCoreNamesNoFeature -v .`
// shows.
func TestCoreNamesNoFeature(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the package")
	}
	patterns := corePatterns(t)
	arrows := importArrows(t)
	counts := map[string]int{}
	var upward []string
	for k, names := range arrows {
		from, to := layer(k[0], patterns), layer(k[1], patterns)
		counts[from+"→"+to]++
		if from == "core" && to != "core" {
			upward = append(upward, fmt.Sprintf("%s → %s: %s", k[0], k[1], strings.Join(names, " ")))
		}
	}
	t.Logf("%d arrows between files: %v", len(arrows), counts)
	slices.Sort(upward)
	for _, a := range upward {
		t.Errorf("a core file names what a feature's file declares (move it to a core file, or reach the feature through an interface the core defines): %s", a)
	}
}

// TestCoreFileListMatches checks that every pattern of the core's list names
// a library file, so that a renamed file cannot leave the list stale.
func TestCoreFileListMatches(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range corePatterns(t) {
		if !slices.ContainsFunc(entries, func(e os.DirEntry) bool {
			ok, _ := filepath.Match(p, e.Name())
			return ok && libraryFile(e.Name())
		}) {
			t.Errorf("%s: %q matches no library file", coreFileList, p)
		}
	}
}

// copyWithScript copies the core and features into package pkg of a
// module of its own with copy.sh and returns
// the module's directory and what the script printed.
func copyWithScript(t *testing.T, pkg string, features ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module vendored\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", append([]string{"copy.sh", filepath.Join(dir, pkg), pkg}, features...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("copy.sh: %v\n%s", err, out)
	}
	checkCopyProvenance(t, filepath.Join(dir, pkg))
	return dir, string(out)
}

// TestCoreServesStdioAlone copies the core's files, and only them, into a
// package of a module of its own with copy.sh, vets it,
// then builds a small command on the core's API (testdata/core/echo) and
// checks its stdio transcript: the core needs no feature to serve MCP over
// stdio.
func TestCoreServesStdioAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a copy of the core")
	}
	dir, printed := copyWithScript(t, "mcpcore")
	if !strings.HasPrefix(printed, "core ") || strings.Count(printed, "\n") != 1 {
		t.Errorf("copy.sh of the core alone printed %q, want one line for the core", printed)
	}
	main, err := os.ReadFile("testdata/core/echo/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "echo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "echo", "main.go"), main, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "echo-bin")
	for _, args := range [][]string{{"vet", "./..."}, {"build", "-o", bin, "./echo"}} {
		goCommand(t, dir, args...)
	}
	in, err := os.ReadFile("testdata/core/echo.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the core's echo server: %v (want exit status 0 at EOF)\nstderr: %s", err, stderr.Bytes())
	}
	checkGoldenLines(t, "testdata/core/echo.out.jsonl", out)
}

// TestCopyCoreWithAFeature copies the core and one feature with copy.sh and
// vets the copy: a feature needs the core and nothing else it does not name.
func TestCopyCoreWithAFeature(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a copy of the core")
	}
	for _, feature := range []string{"tasks", "apps"} {
		t.Run(feature, func(t *testing.T) {
			dir, printed := copyWithScript(t, "mcp"+feature, feature)
			if !strings.Contains(printed, "\n"+feature+" ") {
				t.Errorf("copy.sh printed %q, want a line for %s", printed, feature)
			}
			goCommand(t, dir, "vet", "./...")
		})
	}
	if _, err := exec.Command("sh", "copy.sh", t.TempDir(), "x", "nosuchfeature").CombinedOutput(); err == nil {
		t.Error("copy.sh copied a feature no file is named for")
	}
}

// checkGoldenLines compares out, one JSON-RPC frame a line, with the golden
// file, both sorted: requests run concurrently, so their answers come in no
// set order. With -update it rewrites the file instead.
func checkGoldenLines(t *testing.T, golden string, out []byte) {
	t.Helper()
	got := textLines(out)
	slices.Sort(got)
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	wantLines := textLines(want)
	slices.Sort(wantLines)
	for i := range max(len(got), len(wantLines)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Errorf("%s line %d:\n got %s\nwant %s", golden, i+1, g, w)
		}
	}
}

// textLines splits b into its lines.
func textLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
