package main

// The skills extension (io.modelcontextprotocol/skills, SEP-2640): skills
// read from an fs.FS, each a directory whose SKILL.md starts with YAML
// frontmatter (skills_frontmatter.go). This file finds the skills, checks
// them and keeps their files' digests; skills_methods.go serves skills/list,
// skills/get and resources/directory/read, and every file of a skill is a
// resource that resources/read serves (skills_files.go reads them).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SkillsExtension identifies the skills extension in capabilities.extensions.
const SkillsExtension = "io.modelcontextprotocol/skills"

// The extension's per-skill limits: a skill over either is not served.
const (
	MaxSkillFiles = 512      // files of one skill, SKILL.md included
	MaxSkillBytes = 16 << 20 // their sizes summed
)

const (
	skillFileName = "SKILL.md"
	skillScheme   = "skill://"
	// skillMetaPrefix is the extension's prefix of _meta keys on skill
	// resources.
	skillMetaPrefix = "io.modelcontextprotocol.skills/"
	// maxSkillDepth bounds how deep below the root a skill's directory, or a
	// file below it, may be (in path segments).
	maxSkillDepth = 32
)

// SkillsOptions configure AddSkills. A zero value means the default. The
// Runtime's Logger receives a line for every skill left out (invalid
// frontmatter, a name that does not match its directory, a limit exceeded)
// and every file skipped.
type SkillsOptions struct {
	// Dynamic reports the skills (by skill path, e.g. "acme/refunds") whose
	// content is generated, so that stable digests cannot be published:
	// their entries carry "resources": "dynamic". nil: none.
	Dynamic func(skillPath string) bool
}

// Skills serves the skills of one fs.FS on a Runtime (AddSkills). Its
// methods are safe for concurrent use.
//
// The set of skills is the one the last Rescan found (AddSkills runs the
// first); skills/get also loads a skill added since, by its URI. Each entry
// skills/list or skills/get returns is checked against the files at that
// moment: its files are listed again and a file whose size or modification
// time changed is hashed again, so an entry never carries a digest of
// content that is gone (a change that keeps both size and modification time
// is caught when the file is read: resources/read hashes what it serves).
type Skills struct {
	rt      *Runtime
	fsys    fs.FS
	dynamic func(string) bool
	logger  *slog.Logger

	mu   sync.Mutex // serializes changes of snap and of the catalog's skill resources
	snap atomic.Pointer[skillSnapshot]

	digests digestCache
}

// skillSnapshot is one immutable view of the skills served.
type skillSnapshot struct {
	generation uint64
	skills     []*skillEntry          // by URI
	byURI      map[string]*skillEntry // SKILL.md URI → skill
	files      map[string]Resource    // file URI → its resources/list entry
}

// skillEntry is one skill as the last look at its directory found it.
type skillEntry struct {
	dir         string          // its directory, a path of the fs.FS
	uri         string          // skill://<dir>/SKILL.md
	name        string          // frontmatter name, the last segment of dir
	description string          // frontmatter description
	frontmatter json.RawMessage // the whole frontmatter, a JSON object
	files       []skillFile     // every file, by path; SKILL.md among them
	dynamic     bool
}

// skillFile is one file of a skill.
type skillFile struct {
	path    string // in the fs.FS
	uri     string
	size    int64
	modTime time.Time
}

// AddSkills serves the skills of fsys on rt: it registers skills/list,
// skills/get and resources/directory/read, declares the extension (with
// directoryRead) while at least one skill is served, and makes every file of
// every skill a resource. A skill is a directory below the root of fsys
// holding a regular file SKILL.md; its URI is skill://<dir>/SKILL.md, with
// dir's path segments percent-encoded as needed.
//
// A directory on disk should be given as an os.Root's FS (os.OpenRoot(dir)
// then root.FS()), which refuses any path that leaves the root; os.DirFS
// follows symbolic links out of it. Whatever fsys is, symbolic links and
// files that are not regular (devices, pipes, sockets) are never served:
// they are skipped, and a file is checked again when it is opened.
//
// Only one Skills may be added to a Runtime. The error names what failed;
// skills that are invalid are not errors: each is left out with a log line.
func (rt *Runtime) AddSkills(fsys fs.FS, opts SkillsOptions) (*Skills, error) {
	if fsys == nil {
		return nil, errors.New("adding skills: nil fs.FS")
	}
	s := &Skills{rt: rt, fsys: fsys, dynamic: opts.Dynamic, logger: rt.logger}
	s.snap.Store(&skillSnapshot{byURI: map[string]*skillEntry{}, files: map[string]Resource{}})
	for method, h := range map[string]featureMethod{
		methodSkillsList: s.serveList, methodSkillsGet: s.serveGet, methodDirectoryRead: s.serveDirectoryRead,
	} {
		if err := rt.addMethod(method, h); err != nil {
			return nil, fmt.Errorf("adding skills: %w", err)
		}
	}
	s.Rescan()
	return s, nil
}

// Rescan looks at the whole fs.FS again and serves the skills it finds now.
// When the set of skills or of their files changed, resources/list changes
// and notifications/resources/list_changed (and listen streams that asked
// for resource list changes) say so. It returns the number of skills served.
func (s *Skills) Rescan() int {
	var found []*skillEntry
	for _, dir := range s.findSkillDirs() {
		if e := s.loadSkill(dir); e != nil {
			found = append(found, e)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replace(found)
	return len(found)
}

// Len returns the number of skills served.
func (s *Skills) Len() int { return len(s.snap.Load().skills) }

// findSkillDirs returns every directory below the root holding a regular
// SKILL.md, skipping symbolic links and whatever cannot be read.
func (s *Skills) findSkillDirs() []string {
	var dirs []string
	err := fs.WalkDir(s.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			s.logger.Warn("skills: skipping an unreadable path", "path", p, "err", err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() && p != "." && strings.Count(p, "/") >= maxSkillDepth {
			s.logger.Warn("skills: skipping a directory nested too deep", "path", p, "limit", maxSkillDepth)
			return fs.SkipDir
		}
		if d.Name() == skillFileName && d.Type().IsRegular() {
			if dir := path.Dir(p); dir != "." {
				dirs = append(dirs, dir)
			} else {
				s.logger.Warn("skills: SKILL.md at the root is not a skill (a skill is a directory below the root)")
			}
		}
		return nil
	})
	if err != nil {
		s.logger.Warn("skills: walking the skills folder failed", "err", err)
	}
	return dirs
}

// loadSkill reads the skill in dir, or returns nil after logging why it is
// left out.
func (s *Skills) loadSkill(dir string) *skillEntry {
	e, err := s.readSkill(dir)
	if err != nil {
		s.logger.Warn("skills: leaving out a skill", "dir", dir, "err", err)
		return nil
	}
	return e
}

// readSkill reads and checks the skill in dir: its frontmatter, its name and
// its files within the limits.
func (s *Skills) readSkill(dir string) (*skillEntry, error) {
	uri, ok := skillURI(dir, skillFileName)
	if !ok {
		return nil, fmt.Errorf("its path cannot be a skill:// URI")
	}
	content, err := readSkillFile(s.fsys, path.Join(dir, skillFileName), maxFrontmatterBytes+4096, true)
	if err != nil {
		return nil, err
	}
	text, ok := splitFrontmatter(content)
	if !ok {
		return nil, errors.New("SKILL.md does not begin with a --- delimited YAML frontmatter")
	}
	fm, err := parseFrontmatter(text)
	if err != nil {
		return nil, err
	}
	name, description, err := requiredFrontmatter(fm)
	if err != nil {
		return nil, err
	}
	if last := path.Base(dir); last != name {
		return nil, fmt.Errorf("frontmatter name %q does not match the directory name %q", name, last)
	}
	encoded, err := marshalJSON(fm)
	if err != nil {
		return nil, fmt.Errorf("frontmatter: %w", err)
	}
	files, err := s.listSkillFiles(dir)
	if err != nil {
		return nil, err
	}
	return &skillEntry{
		dir: dir, uri: uri, name: name, description: description, frontmatter: encoded, files: files,
		dynamic: s.dynamic != nil && s.dynamic(dir),
	}, nil
}

// requiredFrontmatter returns name and description, which the Agent Skills
// specification requires: name 1-64 lowercase letters, digits and single
// inner hyphens; description a non-empty string of at most 1024 characters.
func requiredFrontmatter(fm *yamlMap) (name, description string, err error) {
	v, _ := fm.get("name")
	name, ok := v.(string)
	if !ok || !isSkillName(name) {
		return "", "", fmt.Errorf("frontmatter name %v is not a skill name (1-64 of a-z, 0-9 and inner single hyphens)", quoteValue(v))
	}
	v, _ = fm.get("description")
	description, ok = v.(string)
	if !ok || strings.TrimSpace(description) == "" || len([]rune(description)) > 1024 {
		return "", "", errors.New("frontmatter description must be a non-empty string of at most 1024 characters")
	}
	return name, description, nil
}

func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	if v == nil {
		return "(missing)"
	}
	return fmt.Sprintf("%v", v)
}

// isSkillName reports whether name follows the Agent Skills naming rules.
func isSkillName(name string) bool {
	if name == "" || len(name) > 64 || name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// listSkillFiles returns every regular file below dir, by path, within the
// limits; symbolic links and other non-regular files are skipped with a log
// line. Going over a limit is an error: the skill is not served.
func (s *Skills) listSkillFiles(dir string) ([]skillFile, error) {
	var files []skillFile
	var total int64
	err := fs.WalkDir(s.fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.Count(p, "/") >= maxSkillDepth {
				return fmt.Errorf("%s is nested deeper than %d directories", p, maxSkillDepth)
			}
			return nil
		}
		if !d.Type().IsRegular() {
			s.logger.Warn("skills: skipping a file that is not regular (a symbolic link, device, pipe or socket)", "path", p)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		uri, ok := skillURI(p, "")
		if !ok {
			return fmt.Errorf("%s cannot be a skill:// URI", p)
		}
		if len(files) == MaxSkillFiles {
			return fmt.Errorf("the skill has more than %d files", MaxSkillFiles)
		}
		if total += info.Size(); total > MaxSkillBytes {
			return fmt.Errorf("the skill's files exceed %d bytes", MaxSkillBytes)
		}
		files = append(files, skillFile{path: p, uri: uri, size: info.Size(), modTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b skillFile) int { return strings.Compare(a.uri, b.uri) })
	return files, nil
}

// skillURI returns the skill:// URI of p (a path of the fs.FS), with file
// appended when not empty; false when a segment is not a name a URI can
// carry back to the same path (see skillPathOf).
func skillURI(p, file string) (string, bool) {
	if file != "" {
		p = path.Join(p, file)
	}
	segments := strings.Split(p, "/")
	for i, seg := range segments {
		if !isSafeSegment(seg) {
			return "", false
		}
		segments[i] = url.PathEscape(seg)
	}
	return skillScheme + strings.Join(segments, "/"), true
}

// isSafeSegment reports whether seg may be a segment of a served path.
func isSafeSegment(seg string) bool {
	return seg != "" && seg != "." && seg != ".." && !strings.ContainsAny(seg, "/\\\x00")
}

// skillPathOf returns the fs.FS path a skill:// URI names. Only the exact
// URI skillURI makes for that path is accepted: no "..", "." or empty
// segment, encoded or not, no other encoding of the same path, nothing
// absolute, no query or fragment.
func skillPathOf(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, skillScheme)
	if !ok || rest == "" {
		return "", false
	}
	segments := strings.Split(rest, "/")
	for i, seg := range segments {
		decoded, err := url.PathUnescape(seg)
		if err != nil || !isSafeSegment(decoded) {
			return "", false
		}
		segments[i] = decoded
	}
	p := strings.Join(segments, "/")
	if !fs.ValidPath(p) || strings.Count(p, "/") > maxSkillDepth {
		return "", false
	}
	if again, ok := skillURI(p, ""); !ok || again != uri {
		return "", false
	}
	return p, true
}

// replace makes found the skills served: the catalog's resources follow in
// one change, and the listing's generation moves when anything listed
// changed. The caller holds s.mu.
func (s *Skills) replace(found []*skillEntry) {
	old := s.snap.Load()
	next := &skillSnapshot{generation: old.generation, byURI: map[string]*skillEntry{}, files: map[string]Resource{}}
	for _, e := range found {
		if next.byURI[e.uri] != nil {
			continue
		}
		next.byURI[e.uri] = e
		next.skills = append(next.skills, e)
	}
	slices.SortFunc(next.skills, func(a, b *skillEntry) int { return strings.Compare(a.uri, b.uri) })
	for _, e := range next.skills {
		for _, f := range e.files {
			next.files[f.uri] = s.fileResource(next, f)
		}
	}
	var remove []string
	var add []Resource
	for uri, r := range old.files {
		if n, ok := next.files[uri]; !ok || !sameResource(n, r) {
			remove = append(remove, uri)
		}
	}
	for uri, r := range next.files {
		if o, ok := old.files[uri]; !ok || !sameResource(o, r) {
			add = append(add, r)
		}
	}
	slices.Sort(remove)
	slices.SortFunc(add, func(a, b Resource) int { return strings.Compare(a.URI, b.URI) })
	if len(remove) > 0 || len(add) > 0 || !sameSkills(old.skills, next.skills) {
		next.generation++
	}
	handlers := make([]ResourceHandler, len(add))
	for i, r := range add {
		handlers[i] = s.readHandler(r.URI)
	}
	if err := s.rt.changeResources(remove, add, handlers); err != nil {
		s.logger.Warn("skills: some skill files are not served as resources", "err", err)
	}
	s.snap.Store(next)
	if len(next.skills) > 0 {
		s.rt.declareExtension(SkillsExtension, json.RawMessage(`{"directoryRead":true}`))
	} else {
		s.rt.declareExtension(SkillsExtension, nil)
	}
}

// fileResource is f's resources/list entry: a SKILL.md of a served skill is
// named and described by its frontmatter, as the extension says.
func (s *Skills) fileResource(snap *skillSnapshot, f skillFile) Resource {
	r := Resource{URI: f.uri, Name: path.Base(f.path), MIMEType: skillMIMEType(f.path), Size: f.size}
	if e := snap.byURI[f.uri]; e != nil {
		r.Name, r.Description = e.name, e.description
	}
	return r
}

func sameResource(a, b Resource) bool {
	return a.URI == b.URI && a.Name == b.Name && a.Description == b.Description && a.MIMEType == b.MIMEType && a.Size == b.Size
}

// sameSkills reports whether two listings show the same entries' URIs,
// frontmatter and files.
func sameSkills(a, b []*skillEntry) bool {
	return slices.EqualFunc(a, b, func(x, y *skillEntry) bool {
		return x.uri == y.uri && string(x.frontmatter) == string(y.frontmatter) && x.dynamic == y.dynamic &&
			slices.EqualFunc(x.files, y.files, func(f, g skillFile) bool { return f.uri == g.uri && f.size == g.size })
	})
}

// refreshed returns e as its directory is now: the same entry when nothing
// changed, a new one when its files or SKILL.md changed, nil when it is no
// longer a valid skill. A change is applied to what is served.
func (s *Skills) refreshed(e *skillEntry) *skillEntry {
	now, err := s.readSkill(e.dir)
	if err != nil {
		s.logger.Warn("skills: a skill is no longer served", "dir", e.dir, "err", err)
		now = nil
	}
	if now != nil && sameSkills([]*skillEntry{e}, []*skillEntry{now}) && sameModTimes(e.files, now.files) {
		return e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := s.snap.Load()
	var found []*skillEntry
	for _, x := range snap.skills {
		if x.uri != e.uri {
			found = append(found, x)
		}
	}
	if now != nil {
		found = append(found, now)
	}
	s.replace(found)
	return now
}

func sameModTimes(a, b []skillFile) bool {
	return slices.EqualFunc(a, b, func(f, g skillFile) bool { return f.modTime.Equal(g.modTime) })
}

// adopt serves the skill at dir, found by skills/get after the last Rescan,
// and returns it; nil when dir holds no valid skill.
func (s *Skills) adopt(dir string) *skillEntry {
	e, err := s.readSkill(dir)
	if err != nil {
		// At debug level: any client may name any URI.
		s.logger.Debug("skills: skills/get names no skill that can be served", "dir", dir, "err", err)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := s.snap.Load()
	if known := snap.byURI[e.uri]; known != nil {
		return known
	}
	s.replace(append(slices.Clone(snap.skills), e))
	return e
}
