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

// copyHeader is the comment copy.sh starts each copied file with: the file
// and commit it came from (+dirty: the checkout had changes not committed),
// and its license, whose text the script writes beside the files.
var copyHeader = regexp.MustCompile(`^// Code copied from mcpstdio, file (\S+), at commit ([0-9a-f]{40}(?:\+dirty)?|unknown \(not a git checkout\))\.\n` +
	`// MIT License, Copyright \(c\) 2026 The mcpstdio Authors; its text is in LICENSE-mcpstdio beside this file\.\n\n`)

// checkCopyProvenance checks what keeps a copy made by copy.sh into dir
// legal and traceable: every file starts with copyHeader naming itself and
// the checkout's commit, and LICENSE-mcpstdio is the repository's LICENSE.
func checkCopyProvenance(t *testing.T, dir string) {
	t.Helper()
	license, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	if copied, err := os.ReadFile(filepath.Join(dir, "LICENSE-mcpstdio")); err != nil || !slices.Equal(copied, license) {
		t.Errorf("the copy's LICENSE-mcpstdio is not the repository's LICENSE (%v)", err)
	}
	want := "unknown (not a git checkout)"
	if head, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		want = strings.TrimSpace(string(head))
		if status, err := exec.Command("git", "status", "--porcelain").Output(); err == nil && len(status) > 0 {
			want += "+dirty"
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go file in the copy %s (%v)", dir, err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := copyHeader.FindSubmatch(src)
		switch {
		case m == nil:
			t.Errorf("%s does not start with the copy's header: %.200q", filepath.Base(f), src)
		case string(m[1]) != filepath.Base(f) || string(m[2]) != want:
			t.Errorf("%s's header names file %s at commit %s, want %s at %s", filepath.Base(f), m[1], m[2], filepath.Base(f), want)
		}
	}
}
