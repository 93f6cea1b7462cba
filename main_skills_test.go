package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinarySkills serves a copy of testdata/skills with the command, as the
// docs/how-to/skills.md shows: the extension is declared, the example skills
// are listed, read and browsed, and a skill added to the folder while serving
// is found by skills/get at once (a rescan would find it on -skills-rescan's
// period; the test does not wait on a clock), which the client hears as a
// resource list change.
func TestBinarySkills(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, filepath.Join("testdata", "skills"), dir)
	p := startServer(t, "-skills", dir, "-skills-rescan", "unlimited")
	caps := resultOf(t, p.call(initLine))["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any)[SkillsExtension].(map[string]any); ext["directoryRead"] != true {
		t.Fatalf("capabilities %v", caps)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	skills := resultOf(t, p.call(`{"jsonrpc":"2.0","id":2,"method":"skills/list"}`))["skills"].([]any)
	if len(skills) != 2 || skills[0].(map[string]any)["uri"] != "skill://mcpstdio-reference/SKILL.md" {
		t.Fatalf("skills %v", skills)
	}
	contents := resultOf(t, p.call(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"skill://mcpstdio-reference/SKILL.md"}}`))["contents"].([]any)
	if c := contents[0].(map[string]any); c["mimeType"] != "text/markdown" || !strings.HasPrefix(c["text"].(string), "---\nname: mcpstdio-reference\n") {
		t.Fatalf("SKILL.md read as %v", c)
	}
	children := resultOf(t, p.call(`{"jsonrpc":"2.0","id":4,"method":"resources/directory/read","params":{"uri":"skill://mcpstdio-reference"}}`))["resources"].([]any)
	if len(children) != 3 || children[1].(map[string]any)["mimeType"] != mimeTypeDirectory {
		t.Fatalf("directory %v", children)
	}
	writeFile(t, filepath.Join(dir, "added", "SKILL.md"), skillMD("added", "Added while serving"))
	// The answer, and the resource list change it made, in either order:
	// the change is announced while the request runs.
	p.send(`{"jsonrpc":"2.0","id":5,"method":"skills/get","params":{"uri":"skill://added/SKILL.md"}}`)
	var answered, announced bool
	for range 2 {
		switch m := p.recv(); {
		case m["method"] == "notifications/resources/list_changed":
			announced = true
		case m["id"] == float64(5):
			answered = resultOf(t, m)["skill"].(map[string]any)["uri"] == "skill://added/SKILL.md"
		default:
			t.Fatalf("unexpected %v", m)
		}
	}
	if !answered || !announced {
		t.Fatalf("skills/get of an added skill: answered %v, list change announced %v", answered, announced)
	}
	if status, _ := p.exit(); status != 0 {
		t.Fatalf("exit status %d; stderr %s", status, p.stderrText())
	}
}

func TestParseFlagsSkills(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "x")
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"-skills", filepath.Join(t.TempDir(), "missing")}, "is not a readable directory"},
		{[]string{"-skills", file}, "is not a readable directory"},
		{[]string{"-skills-rescan", "1s"}, "-skills-rescan needs -skills"},
		{[]string{"-skills", "testdata/skills", "-skills-rescan", "-1s"}, "for flag -skills-rescan: must be >= 0 or unlimited, got -1s"},
		{[]string{"-skills", "testdata/skills", "-skills-rescan", "0"}, ""},
		{[]string{"-skills", "testdata/skills", "-skills-rescan", "unlimited"}, ""},
	} {
		var stderr strings.Builder
		_, err := parseFlags(tt.args, &stderr)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(stderr.String(), tt.err)) {
			t.Errorf("%v: %v, stderr %q; want %q", tt.args, err, stderr.String(), tt.err)
		}
	}
}

// copyTree copies the regular files below src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
