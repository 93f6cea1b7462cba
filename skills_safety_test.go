package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestSkillsEscapes tries every way out of the skills root: dot segments
// plain and percent-encoded, absolute and odd paths, symbolic links to files
// and directories outside (found by the scan and swapped in after it), with
// an os.Root's FS and with os.DirFS, which follows links.
func TestSkillsEscapes(t *testing.T) {
	for _, fsName := range []string{"os.Root", "os.DirFS"} {
		t.Run(fsName, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "skills")
			outside := filepath.Join(base, "outside")
			writeFile(t, filepath.Join(root, "good", "SKILL.md"), skillMD("good", "The only skill"))
			writeFile(t, filepath.Join(root, "good", "notes.md"), "notes")
			writeFile(t, filepath.Join(outside, "secret.txt"), "SECRET")
			writeFile(t, filepath.Join(outside, "linked", "SKILL.md"), skillMD("linked", "Outside the root"))
			for link, target := range map[string]string{
				filepath.Join(root, "good", "leak.txt"): filepath.Join(outside, "secret.txt"),
				filepath.Join(root, "good", "linkdir"):  outside,
				filepath.Join(root, "linked"):           filepath.Join(outside, "linked"),
			} {
				if err := os.Symlink(target, link); err != nil {
					t.Skipf("symbolic links: %v", err)
				}
			}
			fsys := os.DirFS(root)
			if fsName == "os.Root" {
				fsys = rootFS(t, root)
			}
			rt, _, _ := newSkillsRuntime(t, fsys, testOptions(), SkillsOptions{})
			listed := listAllSkills(t, rt)
			if got := uris(listed); !slices.Equal(got, []string{"skill://good/SKILL.md"}) {
				t.Fatalf("listed %v", got)
			}
			if files := listed[0].files(t); len(files) != 2 {
				t.Fatalf("good's resources %v, want SKILL.md and notes.md only", files)
			}
			for _, uri := range []string{
				"skill://linked/SKILL.md", "skill://good/../linked/SKILL.md", "skill://good/%2e%2e/linked/SKILL.md",
				"skill://good/%2E%2E/%2E%2E/outside/linked/SKILL.md", "skill://../outside/linked/SKILL.md",
				"skill://%2e%2e/outside/linked/SKILL.md", "skill:///linked/SKILL.md", "skill://good//SKILL.md",
				"skill://good/./SKILL.md", "skill://good%2f..%2flinked/SKILL.md", "skill://good\\..\\linked/SKILL.md",
				"skill://good/linkdir/linked/SKILL.md", "skill://%67ood/SKILL.md", "skill://good/SKILL.md?x=1",
				"file:///etc/passwd", "skill://" + filepath.Join(outside, "linked") + "/SKILL.md",
			} {
				wantError(t, dispatch(rt, statelessRequest(methodSkillsGet, `{"uri":`+skillsQuote(t, uri)+`}`)),
					CodeInvalidParams, "No skill is served at this URI", `{"uri":`+skillsQuote(t, uri)+`}`)
			}
			for _, uri := range []string{
				"skill://good/leak.txt", "skill://good/linkdir/secret.txt", "skill://good/../../outside/secret.txt",
				"skill://good/%2e%2e/%2e%2e/outside/secret.txt", "skill://linked/SKILL.md",
			} {
				wantError(t, dispatch(rt, statelessRequest("resources/read", `{"uri":`+skillsQuote(t, uri)+`}`)),
					CodeInvalidParams, "Resource not found", `{"uri":`+skillsQuote(t, uri)+`}`)
			}
			for _, uri := range []string{"skill://good/linkdir", "skill://linked", "skill://good/..", "skill://good/%2e%2e", "skill:///", "skill://"} {
				wantError(t, dispatch(rt, statelessRequest(methodDirectoryRead, `{"uri":`+skillsQuote(t, uri)+`}`)),
					CodeInvalidParams, "Not a directory resource", `{"uri":`+skillsQuote(t, uri)+`}`)
			}
			// The directory lists neither link.
			wantResult(t, dispatch(rt, legacyRequest("2025-11-25", methodDirectoryRead, `{"uri":"skill://good"}`)),
				`{"resources":[{"uri":"skill://good/SKILL.md","name":"good","description":"The only skill","mimeType":"text/markdown","size":`+fmt.Sprint(len(skillMD("good", "The only skill")))+`},{"uri":"skill://good/notes.md","name":"notes.md","mimeType":"text/markdown","size":5}]}`)
			// A file swapped for a link after the scan is refused, never
			// followed.
			notes := filepath.Join(root, "good", "notes.md")
			if err := os.Remove(notes); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "secret.txt"), notes); err != nil {
				t.Fatal(err)
			}
			reply := dispatch(rt, statelessRequest("resources/read", `{"uri":"skill://good/notes.md"}`))
			if reply.Error == nil || strings.Contains(string(reply.Result), "SECRET") {
				t.Fatalf("a swapped-in link was followed: %s", reply.Result)
			}
			wantError(t, reply, CodeInvalidParams, "Skill file cannot be served", `{"uri":"skill://good/notes.md"}`)
			if e := listAllSkills(t, rt); len(e) != 1 || len(e[0].files(t)) != 1 {
				t.Fatalf("after the swap, listed %v", e)
			}
		})
	}
}

// TestSkillsNonRegularFiles: a named pipe in a skill is neither listed nor
// opened (opening it would block).
func TestSkillsNonRegularFiles(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "good", "SKILL.md"), skillMD("good", "With a pipe"))
	if err := mkfifo(filepath.Join(root, "good", "pipe")); err != nil {
		t.Skipf("named pipes: %v", err)
	}
	rt, _, logs := newSkillsRuntime(t, rootFS(t, root), testOptions(), SkillsOptions{})
	if e := listAllSkills(t, rt); len(e) != 1 || len(e[0].files(t)) != 1 {
		t.Fatalf("listed %v", e)
	}
	if !strings.Contains(logs.String(), "skipping a file that is not regular") {
		t.Fatalf("no log line for the pipe in\n%s", logs)
	}
	wantError(t, dispatch(rt, statelessRequest("resources/read", `{"uri":"skill://good/pipe"}`)), CodeInvalidParams, "Resource not found", `{"uri":"skill://good/pipe"}`)
	if _, err := readSkillFile(rootFS(t, root), "good/pipe", 10, false); err == nil {
		t.Fatal("readSkillFile opened a named pipe")
	}
}

func TestSkillPathOf(t *testing.T) {
	for _, tt := range []struct {
		uri, path string
	}{
		{"skill://a/SKILL.md", "a/SKILL.md"},
		{"skill://acme/billing/refunds/SKILL.md", "acme/billing/refunds/SKILL.md"},
		{"skill://a/my%20notes.md", "a/my notes.md"},
		{"skill://a/my notes.md", ""},
		{"skill://a/../b", ""},
		{"skill://a/%2e%2e/b", ""},
		{"skill://a/%2E/b", ""},
		{"skill://a//b", ""},
		{"skill://a/b/", ""},
		{"skill:///a", ""},
		{"skill://", ""},
		{"skill://a%2fb", ""},
		{"skill://a%5cb", ""},
		{"skill://a%00b", ""},
		{"skill://%61", ""},
		{"skill://a/%zz", ""},
		{"file://a", ""},
	} {
		p, ok := skillPathOf(tt.uri)
		if ok != (tt.path != "") || p != tt.path {
			t.Errorf("skillPathOf(%q) = %q, %v; want %q", tt.uri, p, ok, tt.path)
		}
		if ok {
			if back, _ := skillURI(p, ""); back != tt.uri {
				t.Errorf("skillURI(%q) = %q, want %q", p, back, tt.uri)
			}
		}
	}
}

// growingFS is fsys with one file, name, that grows while it is read: it
// opens with the size fsys gives it, its reads never end, and read counts
// the bytes they handed out.
type growingFS struct {
	fstest.MapFS
	name string
	read *int64
}

func (g growingFS) Open(name string) (fs.File, error) {
	f, err := g.MapFS.Open(name)
	if err != nil || name != g.name {
		return f, err
	}
	return growingFile{f, g.read}, nil
}

type growingFile struct {
	fs.File
	read *int64
}

func (f growingFile) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	*f.read += int64(len(p))
	return len(p), nil
}

// A file that grows while it is read is refused once it passes the limit
// (or cut at the limit when a prefix is asked for), and no more than the
// limit and one byte is read of it, whatever it grows to: the buffer that
// holds it is bounded by the limit.
func TestReadSkillFileBoundedWhileTheFileGrows(t *testing.T) {
	const limit = 1 << 20
	var read int64
	fsys := growingFS{MapFS: fstest.MapFS{"s/data.bin": {Data: make([]byte, 100)}}, name: "s/data.bin", read: &read}
	if _, err := readSkillFile(fsys, "s/data.bin", limit, false); err == nil || !strings.Contains(err.Error(), "grew over the 1048576-byte limit") {
		t.Fatalf("reading a growing file: %v", err)
	}
	if read > limit+1 {
		t.Errorf("%d bytes read of a growing file with a %d-byte limit", read, limit)
	}
	read = 0
	if data, err := readSkillFile(fsys, "s/data.bin", limit, true); err != nil || len(data) != limit || read > limit+1 {
		t.Errorf("its prefix: %d bytes, %v, %d read; want %d", len(data), err, read, limit)
	}
}
