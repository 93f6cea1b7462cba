package otel

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAdapterWithTheLibrary builds observer_otel.go as a user does: copied,
// with a fresh copy of the library files (every root .go file but main.go,
// main_*.go and the tests), into one package of a module that requires
// OpenTelemetry at this module's versions, and runs its tests there
// (testdata/observer_otel_test.go.txt: the SDK's in-memory span recorder and
// ManualReader see the spans and metrics of real requests).
func TestAdapterWithTheLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a copy of the library with OpenTelemetry")
	}
	dir := t.TempDir()
	clause := regexp.MustCompile(`(?m)^package main$`)
	copyAs := func(src, dst string, strip string) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte(strip), nil, 1)
		loc := clause.FindIndex(b)
		if loc == nil {
			t.Fatalf("%s: no package main clause", src)
		}
		b = append(append(append([]byte{}, b[:loc[0]]...), "package mcplib"...), b[loc[1]:]...)
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	library, err := filepath.Glob("../*.go")
	if err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, f := range library {
		name := filepath.Base(f)
		if strings.HasSuffix(name, "_test.go") || name == "main.go" || strings.HasPrefix(name, "main_") {
			continue
		}
		copyAs(f, name, "")
		copied++
	}
	if copied < 20 {
		t.Fatalf("copied %d library files: not the repository root?", copied)
	}
	copyAs("observer_otel.go", "observer_otel.go", "//go:build ignore\n")
	copyAs("testdata/observer_otel_test.go.txt", "observer_otel_test.go", "")
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(mod, []byte("module vendoredotel"))
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"go.mod": mod, "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-race", "-count=1", "-v", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the adapter's tests failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestOTelObserver") {
		t.Fatal("the adapter's tests did not run")
	}
}
