package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"
)

// skillMD returns a SKILL.md with the given name and description.
func skillMD(name, description string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\n---\n\n# " + name + "\n"
}

// skillsLog captures a Skills' log lines.
type skillsLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *skillsLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *skillsLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *skillsLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newSkillsRuntime returns a Runtime serving the skills of fsys, with its log.
func newSkillsRuntime(t *testing.T, fsys fs.FS, opts RuntimeOptions, sopts SkillsOptions) (*Runtime, *Skills, *skillsLog) {
	t.Helper()
	logs := &skillsLog{}
	opts.Logger = logs.logger()
	rt := newTestRuntime(t, opts)
	s, err := rt.AddSkills(fsys, sopts)
	if err != nil {
		t.Fatalf("AddSkills: %v", err)
	}
	return rt, s, logs
}

// rootFS opens dir as an os.Root's FS, closed at the end of the test.
func rootFS(t *testing.T, dir string) fs.FS {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root.FS()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

type testSkillEntry struct {
	URI         string         `json:"uri"`
	Frontmatter map[string]any `json:"frontmatter"`
	Resources   json.RawMessage
}

type testSkillResource struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

func (e testSkillEntry) files(t *testing.T) []testSkillResource {
	t.Helper()
	var rs []testSkillResource
	if err := json.Unmarshal(e.Resources, &rs); err != nil {
		t.Fatalf("resources of %s: %s is not an array: %v", e.URI, e.Resources, err)
	}
	return rs
}

// listAllSkills returns every skill listed, following the cursors.
func listAllSkills(t *testing.T, rt *Runtime) []testSkillEntry {
	t.Helper()
	var all []testSkillEntry
	cursor := ""
	for pages := 0; ; pages++ {
		params := "{}"
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		var res struct {
			Skills     []testSkillEntry `json:"skills"`
			NextCursor string           `json:"nextCursor"`
		}
		decodeResult(t, dispatch(rt, statelessRequest(methodSkillsList, params)), &res)
		all = append(all, res.Skills...)
		if res.NextCursor == "" {
			return all
		}
		if pages > 100 {
			t.Fatal("skills/list does not end")
		}
		cursor = res.NextCursor
	}
}

func getSkill(t *testing.T, rt *Runtime, uri string) testSkillEntry {
	t.Helper()
	var res struct {
		Skill testSkillEntry `json:"skill"`
	}
	decodeResult(t, dispatch(rt, statelessRequest(methodSkillsGet, `{"uri":`+skillsQuote(t, uri)+`}`)), &res)
	return res.Skill
}

func skillsQuote(t *testing.T, s string) string {
	t.Helper()
	b, err := marshalJSON(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func uris(entries []testSkillEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.URI)
	}
	return out
}

func sha256Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// readSkillResource reads uri with resources/read (2026) and returns its one
// contents object.
func readSkillResource(t *testing.T, rt *Runtime, uri string) map[string]any {
	t.Helper()
	var res struct {
		Contents []map[string]any `json:"contents"`
	}
	decodeResult(t, dispatch(rt, statelessRequest("resources/read", `{"uri":`+skillsQuote(t, uri)+`}`)), &res)
	if len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %d contents", uri, len(res.Contents))
	}
	return res.Contents[0]
}

func TestSkillsEntriesAndFiles(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00binary"
	fsys := fstest.MapFS{
		"pdf-processing/SKILL.md":                 {Data: []byte("---\nname: pdf-processing\ndescription: Extract PDFs\nlicense: Apache-2.0\nmetadata:\n  version: \"2.1\"\n---\nbody\n")},
		"pdf-processing/templates/invoice.md":     {Data: []byte("# invoice\n")},
		"pdf-processing/templates/regional/eu.md": {Data: []byte("eu\n")},
		"pdf-processing/logo.png":                 {Data: []byte(png)},
		"acme/billing/refunds/SKILL.md":           {Data: []byte(skillMD("refunds", "Process refunds"))},
		"acme/billing/refunds/nested/SKILL.md":    {Data: []byte(skillMD("nested", "A nested skill"))},
		"notes.txt":                               {Data: []byte("not a skill")},
	}
	rt, _, _ := newSkillsRuntime(t, fsys, testOptions(), SkillsOptions{})
	listed := listAllSkills(t, rt)
	want := []string{"skill://acme/billing/refunds/SKILL.md", "skill://acme/billing/refunds/nested/SKILL.md", "skill://pdf-processing/SKILL.md"}
	if got := uris(listed); !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	// The enclosing skill lists the nested skill's files as its own.
	refunds := listed[0].files(t)
	if got := []string{refunds[0].URI, refunds[1].URI}; !slices.Equal(got, []string{"skill://acme/billing/refunds/SKILL.md", "skill://acme/billing/refunds/nested/SKILL.md"}) {
		t.Fatalf("refunds resources %v", refunds)
	}
	pdf := getSkill(t, rt, "skill://pdf-processing/SKILL.md")
	if pdf.Frontmatter["license"] != "Apache-2.0" || pdf.Frontmatter["metadata"].(map[string]any)["version"] != "2.1" {
		t.Fatalf("frontmatter %v", pdf.Frontmatter)
	}
	files := pdf.files(t)
	wantFiles := map[string]string{
		"skill://pdf-processing/SKILL.md":                 string(fsys["pdf-processing/SKILL.md"].Data),
		"skill://pdf-processing/logo.png":                 png,
		"skill://pdf-processing/templates/invoice.md":     "# invoice\n",
		"skill://pdf-processing/templates/regional/eu.md": "eu\n",
	}
	if len(files) != len(wantFiles) {
		t.Fatalf("resources %v, want %d files", files, len(wantFiles))
	}
	for _, f := range files {
		content, ok := wantFiles[f.URI]
		if !ok || f.Digest != sha256Of(content) || f.Size != int64(len(content)) {
			t.Errorf("resource %+v, want digest %s size %d", f, sha256Of(content), len(content))
		}
	}
	// SKILL.md is text/markdown; a binary file is a blob of its own type;
	// each carries the digest of what was served.
	md := readSkillResource(t, rt, "skill://pdf-processing/SKILL.md")
	if md["mimeType"] != "text/markdown" || md["text"] != wantFiles["skill://pdf-processing/SKILL.md"] {
		t.Fatalf("SKILL.md read as %v", md)
	}
	logo := readSkillResource(t, rt, "skill://pdf-processing/logo.png")
	if logo["mimeType"] != "image/png" || logo["blob"] == nil || logo["text"] != nil {
		t.Fatalf("logo.png read as %v", logo)
	}
	if d := logo["_meta"].(map[string]any)["io.modelcontextprotocol.skills/digest"]; d != sha256Of(png) {
		t.Fatalf("logo.png digest %v", d)
	}
	// resources/list names a SKILL.md by its frontmatter.
	var list struct{ Resources []Resource }
	decodeResult(t, dispatch(rt, statelessRequest("resources/list", "{}")), &list)
	i := slices.IndexFunc(list.Resources, func(r Resource) bool { return r.URI == "skill://pdf-processing/SKILL.md" })
	if i < 0 || list.Resources[i].Name != "pdf-processing" || list.Resources[i].Description != "Extract PDFs" || list.Resources[i].MIMEType != "text/markdown" {
		t.Fatalf("resources/list %+v", list.Resources)
	}
}

func TestSkillsCapability(t *testing.T) {
	for _, tt := range []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"skills", fstest.MapFS{"a/SKILL.md": {Data: []byte(skillMD("a", "A"))}}, `"resources":{},"extensions":{"io.modelcontextprotocol/skills":{"directoryRead":true}}`},
		{"none valid", fstest.MapFS{"a/SKILL.md": {Data: []byte(skillMD("b", "A"))}}, `"capabilities":{}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt, _, _ := newSkillsRuntime(t, tt.fsys, testOptions(), SkillsOptions{})
			for _, req := range []*Request{
				newRequest("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`),
				newRequest("initialize", `{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`),
				statelessRequest("server/discover", "{}"),
			} {
				reply := dispatch(rt, req)
				if !strings.Contains(string(reply.Result), tt.want) {
					t.Fatalf("%s: %s, want it to contain %s", req.Method, reply.Result, tt.want)
				}
			}
		})
	}
}

func TestSkillsLeftOut(t *testing.T) {
	fsys := fstest.MapFS{
		"good/SKILL.md":              {Data: []byte(skillMD("good", "Fine"))},
		"mismatch/SKILL.md":          {Data: []byte(skillMD("other-name", "Named after another directory"))},
		"no-frontmatter/SKILL.md":    {Data: []byte("# just markdown\n")},
		"unclosed/SKILL.md":          {Data: []byte("---\nname: unclosed\ndescription: x\n")},
		"no-description/SKILL.md":    {Data: []byte("---\nname: no-description\n---\n")},
		"empty-description/SKILL.md": {Data: []byte("---\nname: empty-description\ndescription: \"\"\n---\n")},
		"Bad_Name/SKILL.md":          {Data: []byte(skillMD("Bad_Name", "Not a skill name"))},
		"double--hyphen/SKILL.md":    {Data: []byte(skillMD("double--hyphen", "Not a skill name"))},
		"bad-yaml/SKILL.md":          {Data: []byte("---\nname: bad-yaml\ndescription: [unclosed\n---\n")},
		"alias/SKILL.md":             {Data: []byte("---\nname: &n alias\ndescription: *n\n---\n")},
		"list-name/SKILL.md":         {Data: []byte("---\nname: [list-name]\ndescription: x\n---\n")},
		"SKILL.md":                   {Data: []byte(skillMD("root", "At the root"))},
	}
	rt, s, logs := newSkillsRuntime(t, fsys, testOptions(), SkillsOptions{})
	if got := uris(listAllSkills(t, rt)); !slices.Equal(got, []string{"skill://good/SKILL.md"}) {
		t.Fatalf("listed %v, want only the good skill", got)
	}
	for _, dir := range []string{"mismatch", "no-frontmatter", "unclosed", "no-description", "empty-description", "Bad_Name", "double--hyphen", "bad-yaml", "alias", "list-name"} {
		if !strings.Contains(logs.String(), "leaving out a skill\" dir="+dir+" ") {
			t.Errorf("no log line for %s in\n%s", dir, logs)
		}
	}
	if !strings.Contains(logs.String(), `frontmatter name \"other-name\" does not match the directory name \"mismatch\"`) {
		t.Errorf("the name mismatch is not explained in\n%s", logs)
	}
	if !strings.Contains(logs.String(), "SKILL.md at the root is not a skill") {
		t.Errorf("no log line for the root SKILL.md in\n%s", logs)
	}
	// Neither is served by skills/get.
	wantError(t, dispatch(rt, statelessRequest(methodSkillsGet, `{"uri":"skill://mismatch/SKILL.md"}`)), CodeInvalidParams, "No skill is served at this URI", `{"uri":"skill://mismatch/SKILL.md"}`)
	if s.Len() != 1 {
		t.Fatalf("Len = %d", s.Len())
	}
}

func TestSkillsLimits(t *testing.T) {
	many := func(n int) fstest.MapFS {
		fsys := fstest.MapFS{"many/SKILL.md": {Data: []byte(skillMD("many", "Many files"))}}
		for i := 1; i < n; i++ {
			fsys[fmt.Sprintf("many/f/%03d.txt", i)] = &fstest.MapFile{Data: []byte("x")}
		}
		return fsys
	}
	big := func(total int) fstest.MapFS {
		md := skillMD("big", "Big files")
		return fstest.MapFS{"big/SKILL.md": {Data: []byte(md)}, "big/blob.bin": {Data: make([]byte, total-len(md))}}
	}
	for _, tt := range []struct {
		name   string
		fsys   fstest.MapFS
		served bool
		files  int
	}{
		{"512 files", many(MaxSkillFiles), true, MaxSkillFiles},
		{"513 files", many(MaxSkillFiles + 1), false, 0},
		{"16 MiB", big(MaxSkillBytes), true, 2},
		{"16 MiB and a byte", big(MaxSkillBytes + 1), false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt, _, logs := newSkillsRuntime(t, tt.fsys, testOptions(), SkillsOptions{})
			listed := listAllSkills(t, rt)
			if !tt.served {
				if len(listed) != 0 || !strings.Contains(logs.String(), "leaving out a skill") {
					t.Fatalf("listed %v; log %s", uris(listed), logs)
				}
				return
			}
			if len(listed) != 1 || len(listed[0].files(t)) != tt.files {
				t.Fatalf("listed %v", listed)
			}
		})
	}
}

func TestSkillsDynamic(t *testing.T) {
	fsys := fstest.MapFS{
		"reports/daily/SKILL.md": {Data: []byte(skillMD("daily", "Generated"))},
		"static/SKILL.md":        {Data: []byte(skillMD("static", "Fixed"))},
	}
	rt, _, _ := newSkillsRuntime(t, fsys, testOptions(), SkillsOptions{Dynamic: func(p string) bool { return p == "reports/daily" }})
	e := getSkill(t, rt, "skill://reports/daily/SKILL.md")
	if string(e.Resources) != `"dynamic"` {
		t.Fatalf("resources %s, want \"dynamic\"", e.Resources)
	}
	if len(getSkill(t, rt, "skill://static/SKILL.md").files(t)) != 1 {
		t.Fatal("a static skill lost its resources")
	}
	// A dynamic skill's files are still read when asked for.
	if c := readSkillResource(t, rt, "skill://reports/daily/SKILL.md"); c["text"] != skillMD("daily", "Generated") {
		t.Fatalf("read %v", c)
	}
}

func TestSkillsPagination(t *testing.T) {
	fsys := fstest.MapFS{}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		fsys[n+"/SKILL.md"] = &fstest.MapFile{Data: []byte(skillMD(n, "Skill "+n))}
		fsys[n+"/x.md"] = &fstest.MapFile{Data: []byte("x")}
	}
	for _, f := range []string{"f1", "f2", "f3"} {
		fsys["a/dir/"+f] = &fstest.MapFile{Data: []byte(f)}
	}
	opts := testOptions()
	opts.PageSize = 2
	rt, _, _ := newSkillsRuntime(t, fsys, opts, SkillsOptions{})
	listed := listAllSkills(t, rt)
	if got := uris(listed); len(got) != 5 || got[0] != "skill://a/SKILL.md" || got[4] != "skill://e/SKILL.md" {
		t.Fatalf("listed %v", got)
	}
	for _, e := range listed {
		if len(e.files(t)) != 2 && e.URI != "skill://a/SKILL.md" {
			t.Fatalf("entry %s split: %s", e.URI, e.Resources)
		}
	}
	// Directory reads page too, and a cursor is good for its directory only.
	var page struct {
		Resources  []Resource `json:"resources"`
		NextCursor string     `json:"nextCursor"`
	}
	decodeResult(t, dispatch(rt, statelessRequest(methodDirectoryRead, `{"uri":"skill://a/dir"}`)), &page)
	if len(page.Resources) != 2 || page.NextCursor == "" {
		t.Fatalf("first page %+v", page)
	}
	cursor := page.NextCursor
	page.NextCursor = ""
	decodeResult(t, dispatch(rt, statelessRequest(methodDirectoryRead, `{"uri":"skill://a/dir","cursor":"`+cursor+`"}`)), &page)
	if len(page.Resources) != 1 || page.Resources[0].URI != "skill://a/dir/f3" || page.NextCursor != "" {
		t.Fatalf("second page %+v", page)
	}
	wantError(t, dispatch(rt, statelessRequest(methodDirectoryRead, `{"uri":"skill://a","cursor":"`+cursor+`"}`)), CodeInvalidParams, "Invalid cursor", "")
	wantError(t, dispatch(rt, statelessRequest(methodSkillsList, `{"cursor":"`+cursor+`"}`)), CodeInvalidParams, "Invalid cursor", "")
}

func TestSkillsDirectoryRead(t *testing.T) {
	fsys := fstest.MapFS{
		"pdf/SKILL.md":                 {Data: []byte(skillMD("pdf", "PDFs"))},
		"pdf/templates/invoice.md":     {Data: []byte("i")},
		"pdf/templates/regional/eu.md": {Data: []byte("eu")},
		"pdf/empty":                    {Mode: fs.ModeDir | 0o755},
		"outside/file.md":              {Data: []byte("not in a skill")},
	}
	rt, _, _ := newSkillsRuntime(t, fsys, testOptions(), SkillsOptions{})
	wantResult(t, dispatch(rt, legacyRequest("2025-11-25", methodDirectoryRead, `{"uri":"skill://pdf/templates"}`)),
		`{"resources":[{"uri":"skill://pdf/templates/invoice.md","name":"invoice.md","mimeType":"text/markdown","size":1},{"uri":"skill://pdf/templates/regional","name":"regional","mimeType":"inode/directory"}]}`)
	wantResult(t, dispatch(rt, legacyRequest("2025-11-25", methodDirectoryRead, `{"uri":"skill://pdf/empty"}`)), `{"resources":[]}`)
	for _, uri := range []string{"skill://pdf/SKILL.md", "skill://pdf/templates/invoice.md", "skill://pdf/missing", "skill://outside", "skill://pdf/", "test://static-text"} {
		wantError(t, dispatch(rt, statelessRequest(methodDirectoryRead, `{"uri":"`+uri+`"}`)), CodeInvalidParams, "Not a directory resource", `{"uri":"`+uri+`"}`)
	}
	wantError(t, dispatch(rt, statelessRequest(methodDirectoryRead, `{"uri":7}`)), CodeInvalidParams, "Invalid params: resources/directory/read requires a string uri", "")
	wantError(t, dispatch(rt, statelessRequest(methodSkillsGet, `{}`)), CodeInvalidParams, "Invalid params: skills/get requires a string uri", "")
}

// TestSkillsDigestAfterChange: a file that changes on disk is listed with its
// new digest, never the old one; one changed without a new size or
// modification time is served with the digest of what is served, which then
// replaces the old one, and subscribers hear of it.
func TestSkillsDigestAfterChange(t *testing.T) {
	root := t.TempDir()
	md := skillMD("doc", "Changes")
	writeFile(t, filepath.Join(root, "doc", "SKILL.md"), md)
	guide := filepath.Join(root, "doc", "guide.md")
	writeFile(t, guide, "version one")
	rt, _, _ := newSkillsRuntime(t, rootFS(t, root), testOptions(), SkillsOptions{})
	changes := make(chan Change, 16)
	stop := rt.WatchChanges(func(c Change) { changes <- c })
	defer stop()
	digestOf := func() testSkillResource {
		t.Helper()
		for _, f := range getSkill(t, rt, "skill://doc/SKILL.md").files(t) {
			if f.URI == "skill://doc/guide.md" {
				return f
			}
		}
		t.Fatal("guide.md not listed")
		return testSkillResource{}
	}
	if f := digestOf(); f.Digest != sha256Of("version one") {
		t.Fatalf("digest %v", f)
	}
	writeFile(t, guide, "version two, longer")
	if f := digestOf(); f.Digest != sha256Of("version two, longer") || f.Size != int64(len("version two, longer")) {
		t.Fatalf("after a change, %v", f)
	}
	// Same size, same modification time, other bytes.
	info, err := os.Stat(guide)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, guide, "VERSION TWO, LONGER")
	if err := os.Chtimes(guide, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	c := readSkillResource(t, rt, "skill://doc/guide.md")
	if c["text"] != "VERSION TWO, LONGER" || c["_meta"].(map[string]any)["io.modelcontextprotocol.skills/digest"] != sha256Of("VERSION TWO, LONGER") {
		t.Fatalf("read %v", c)
	}
	if f := digestOf(); f.Digest != sha256Of("VERSION TWO, LONGER") {
		t.Fatalf("after a read of the changed file, skills/get still says %v", f)
	}
	// Changes are announced synchronously: the update is queued already.
	for updated := false; !updated; {
		select {
		case ch := <-changes:
			updated = ch.Kind == ResourceUpdated && ch.URI == "skill://doc/guide.md"
		default:
			t.Fatal("no resources/updated for the changed file")
		}
	}
}

// TestSkillsDigestComputedOnce: a digest is kept while the file is
// unchanged: the file is not read again for the next entries.
func TestSkillsDigestComputedOnce(t *testing.T) {
	fsys := &countingFS{MapFS: fstest.MapFS{
		"a/SKILL.md": {Data: []byte(skillMD("a", "A")), ModTime: time.Unix(1, 0)},
		"a/big.txt":  {Data: bytes.Repeat([]byte("x"), 1<<16), ModTime: time.Unix(1, 0)},
	}}
	rt, _, _ := newSkillsRuntime(t, fsys, testOptions(), SkillsOptions{})
	getSkill(t, rt, "skill://a/SKILL.md")
	first := fsys.opened("a/big.txt")
	for range 3 {
		getSkill(t, rt, "skill://a/SKILL.md")
		listAllSkills(t, rt)
	}
	if n := fsys.opened("a/big.txt"); n != first || n != 1 {
		t.Fatalf("big.txt opened %d times after the first entry (%d), want once in all", n, first)
	}
}

// countingFS counts the Opens of each path.
type countingFS struct {
	fstest.MapFS
	mu    sync.Mutex
	count map[string]int
}

func (c *countingFS) Open(name string) (fs.File, error) {
	c.mu.Lock()
	if c.count == nil {
		c.count = map[string]int{}
	}
	c.count[name]++
	c.mu.Unlock()
	return c.MapFS.Open(name)
}

func (c *countingFS) opened(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count[name]
}

// TestSkillsRescan: skills added, changed and removed on disk are served
// after a Rescan, which announces each change once; skills/get finds a
// skill added since the last Rescan.
func TestSkillsRescan(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "one", "SKILL.md"), skillMD("one", "First"))
	opts := testOptions()
	opts.ResourcesListChanged = true
	rt, s, _ := newSkillsRuntime(t, rootFS(t, root), opts, SkillsOptions{})
	changes := make(chan Change, 16)
	stop := rt.WatchChanges(func(c Change) { changes <- c })
	defer stop()
	expectChange := func(want bool) {
		t.Helper()
		select {
		case c := <-changes:
			if !want || c.Kind != ResourcesChanged {
				t.Fatalf("change %+v, want none: %v", c, want)
			}
		default:
			if want {
				t.Fatal("no resources list change announced")
			}
		}
	}
	if n := s.Rescan(); n != 1 {
		t.Fatalf("Rescan = %d", n)
	}
	expectChange(false)
	writeFile(t, filepath.Join(root, "two", "SKILL.md"), skillMD("two", "Second"))
	writeFile(t, filepath.Join(root, "two", "a.md"), "a")
	// Not listed before a Rescan, but skills/get answers for it.
	if got := uris(listAllSkills(t, rt)); !slices.Equal(got, []string{"skill://one/SKILL.md"}) {
		t.Fatalf("listed %v", got)
	}
	if e := getSkill(t, rt, "skill://two/SKILL.md"); len(e.files(t)) != 2 {
		t.Fatalf("skills/get of an unlisted skill: %+v", e)
	}
	expectChange(true)
	if got := uris(listAllSkills(t, rt)); !slices.Equal(got, []string{"skill://one/SKILL.md", "skill://two/SKILL.md"}) {
		t.Fatalf("listed %v", got)
	}
	if err := os.RemoveAll(filepath.Join(root, "one")); err != nil {
		t.Fatal(err)
	}
	if n := s.Rescan(); n != 1 {
		t.Fatalf("Rescan = %d", n)
	}
	expectChange(true)
	wantError(t, dispatch(rt, statelessRequest("resources/read", `{"uri":"skill://one/SKILL.md"}`)), CodeInvalidParams, "Resource not found", `{"uri":"skill://one/SKILL.md"}`)
	// A new file in a skill is a change of its listing, seen by skills/list.
	writeFile(t, filepath.Join(root, "two", "b.md"), "b")
	if e := listAllSkills(t, rt); len(e) != 1 || len(e[0].files(t)) != 3 {
		t.Fatalf("listed %v", e)
	}
	expectChange(true)
	s.Rescan()
	expectChange(false)
}

func TestAddSkillsTwice(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	fsys := fstest.MapFS{"a/SKILL.md": {Data: []byte(skillMD("a", "A"))}}
	if _, err := rt.AddSkills(fsys, SkillsOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.AddSkills(fsys, SkillsOptions{}); err == nil || !strings.Contains(err.Error(), "registered already") {
		t.Fatalf("second AddSkills: %v", err)
	}
	if _, err := rt.AddSkills(nil, SkillsOptions{}); err == nil {
		t.Fatal("AddSkills(nil) succeeded")
	}
}

func TestAddMethodRefusesCoreMethods(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	for _, m := range []string{"tools/list", "resources/read", "initialize", ""} {
		if err := rt.addMethod(m, func(context.Context, methodCall) Reply { return Reply{} }); err == nil {
			t.Errorf("addMethod(%q) succeeded", m)
		}
	}
}

// TestSkillsConcurrentRescan: lists, gets and reads run while the folder
// changes and is rescanned (run under -race); each answer is a whole entry
// or a clean error.
func TestSkillsConcurrentRescan(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		writeFile(t, filepath.Join(root, n, "SKILL.md"), skillMD(n, "Skill "+n))
	}
	rt, s, _ := newSkillsRuntime(t, rootFS(t, root), testOptions(), SkillsOptions{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				switch (w + i) % 3 {
				case 0:
					if r := dispatch(rt, statelessRequest(methodSkillsList, "{}")); r.Error != nil {
						t.Errorf("skills/list: %v", r.Error)
					}
				case 1:
					r := dispatch(rt, statelessRequest(methodSkillsGet, `{"uri":"skill://a/SKILL.md"}`))
					if r.Error != nil && r.Error.Code != CodeInvalidParams {
						t.Errorf("skills/get: %v", r.Error)
					}
				case 2:
					r := dispatch(rt, statelessRequest("resources/read", `{"uri":"skill://b/SKILL.md"}`))
					if r.Error != nil && r.Error.Code != CodeInvalidParams {
						t.Errorf("resources/read: %v", r.Error)
					}
				}
			}
		}()
	}
	for i := range 10 {
		writeFile(t, filepath.Join(root, "a", fmt.Sprintf("f%d.md", i)), strings.Repeat("x", i))
		if i%2 == 0 {
			os.RemoveAll(filepath.Join(root, "c"))
		} else {
			writeFile(t, filepath.Join(root, "c", "SKILL.md"), skillMD("c", "Back"))
		}
		s.Rescan()
	}
	wg.Wait()
	s.Rescan()
	if e := getSkill(t, rt, "skill://a/SKILL.md"); len(e.files(t)) != 11 {
		t.Fatalf("a has %d files, want 11", len(e.files(t)))
	}
}
