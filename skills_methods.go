package main

// The methods of the skills extension: skills/list, skills/get and
// resources/directory/read (skills_catalog.go has the skills they serve).

import (
	"context"
	"hash/fnv"
	"io/fs"
	"path"
	"slices"
	"strings"
)

const (
	methodSkillsList    = "skills/list"
	methodSkillsGet     = "skills/get"
	methodDirectoryRead = "resources/directory/read"
	// mimeTypeDirectory is the mimeType of a directory resource.
	mimeTypeDirectory = "inode/directory"
)

// The cursor kinds of the extension's lists (features number theirs from
// 64, clear of the core's, see listKind).
const (
	listSkills listKind = 64 + iota
	listSkillDirectory
)

type listSkillsResult struct {
	Skills     []skillEntryJSON `json:"skills"`
	NextCursor string           `json:"nextCursor,omitempty"`
	resultEnvelope
}

type getSkillResult struct {
	Skill skillEntryJSON `json:"skill"`
	resultEnvelope
}

type readDirectoryResult struct {
	Resources  []Resource `json:"resources"`
	NextCursor string     `json:"nextCursor,omitempty"`
	resultEnvelope
}

// serveList answers skills/list: a page of the skills in URI order, each
// entry whole (never split across pages) and checked against its files now.
// An entry that is no longer a valid skill is left out of its page.
func (s *Skills) serveList(ctx context.Context, call methodCall) Reply {
	c := &call
	cursor, rerr := cursorParam(c.params.cursor)
	if rerr != nil {
		return Reply{Error: rerr}
	}
	snap := s.snap.Load()
	page, next, rerr := paginate(s.rt.cursors, listSkills, snap.skills, snap.generation, cursor, s.rt.pageSize, c.binding())
	if rerr != nil {
		return Reply{Error: rerr}
	}
	entries := make([]skillEntryJSON, 0, len(page))
	for _, e := range page {
		if ctx.Err() != nil {
			return Reply{Error: internalError()}
		}
		if entry, ok := s.currentEntry(ctx, e); ok {
			entries = append(entries, entry)
		}
	}
	return s.rt.envelopeReply(c, true, nil, func(env resultEnvelope) any {
		return listSkillsResult{Skills: entries, NextCursor: next, resultEnvelope: env}
	})
}

// currentEntry returns e's entry as its files are now; false when it is no
// longer a skill that can be served.
func (s *Skills) currentEntry(ctx context.Context, e *skillEntry) (skillEntryJSON, bool) {
	for range 2 { // a file that changes while hashed gets one more look
		if e = s.refreshed(ctx, e); e == nil {
			return skillEntryJSON{}, false
		}
		entry, err := s.entryJSON(e)
		if err == nil {
			return entry, true
		}
		s.logger.WarnContext(ctx, "skills: a skill's files changed while listed", "uri", e.uri, "err", err)
	}
	return skillEntryJSON{}, false
}

// serveGet answers skills/get {uri}: the entry of the skill whose SKILL.md
// is at uri, also for a skill added since the last Rescan; -32602 for a URI
// that names no skill served.
func (s *Skills) serveGet(ctx context.Context, call methodCall) Reply {
	c := &call
	uri, ok := decodeString(c.params.uri)
	if !ok {
		return Reply{Error: invalidParams("Invalid params: skills/get requires a string uri")}
	}
	e := s.snap.Load().byURI[uri]
	if e == nil {
		if p, ok := skillPathOf(uri); ok && path.Base(p) == skillFileName && path.Dir(p) != "." {
			e = s.adopt(ctx, path.Dir(p))
		}
	}
	var entry skillEntryJSON
	if e != nil {
		entry, ok = s.currentEntry(ctx, e)
	}
	if e == nil || !ok {
		return Reply{Error: &RPCError{Code: CodeInvalidParams, Message: "No skill is served at this URI", Data: map[string]string{"uri": uri}}}
	}
	return s.rt.envelopeReply(c, true, nil, func(env resultEnvelope) any {
		return getSkillResult{Skill: entry, resultEnvelope: env}
	})
}

// serveDirectoryRead answers resources/directory/read {uri, cursor?}: the
// direct children of a directory of a served skill (its root or one below
// it), as they are now, in name order and paged; subdirectories are
// directory resources (mimeType inode/directory). A URI that is not such a
// directory is -32602.
func (s *Skills) serveDirectoryRead(ctx context.Context, call methodCall) Reply {
	c := &call
	uri, ok := decodeString(c.params.uri)
	if !ok {
		return Reply{Error: invalidParams("Invalid params: resources/directory/read requires a string uri")}
	}
	cursor, rerr := cursorParam(c.params.cursor)
	if rerr != nil {
		return Reply{Error: rerr}
	}
	notDirectory := &RPCError{Code: CodeInvalidParams, Message: "Not a directory resource", Data: map[string]string{"uri": uri}}
	snap := s.snap.Load()
	p, ok := skillPathOf(uri)
	if !ok || !slices.ContainsFunc(snap.skills, func(e *skillEntry) bool { return p == e.dir || strings.HasPrefix(p, e.dir+"/") }) {
		return Reply{Error: notDirectory}
	}
	children, ok := s.readDirectory(ctx, snap, p)
	if !ok {
		return Reply{Error: notDirectory}
	}
	h := fnv.New64a()
	for _, r := range children {
		h.Write([]byte(r.URI + "\x00" + r.MIMEType + "\x00"))
	}
	page, next, rerr := paginate(s.rt.cursors, listSkillDirectory, children, h.Sum64(), cursor, s.rt.pageSize, c.binding()+"\x00"+uri)
	if rerr != nil {
		return Reply{Error: rerr}
	}
	d := dialectOf(c.version)
	out := make([]Resource, len(page))
	for i, r := range page {
		out[i] = d.resource(r)
	}
	return s.rt.envelopeReply(c, false, nil, func(env resultEnvelope) any {
		return readDirectoryResult{Resources: out, NextCursor: next, resultEnvelope: env}
	})
}

// readDirectory lists the directory p as it is now; false when p is not a
// directory (or is, or passes through, a symbolic link). Symbolic links and
// non-regular files in it are left out.
func (s *Skills) readDirectory(ctx context.Context, snap *skillSnapshot, p string) ([]Resource, bool) {
	if _, err := checkRegular(s.fsys, p, true); err != nil {
		return nil, false
	}
	entries, err := fs.ReadDir(s.fsys, p)
	if err != nil {
		s.logger.WarnContext(ctx, "skills: reading a directory failed", "path", p, "err", err)
		return nil, false
	}
	children := make([]Resource, 0, len(entries))
	for _, d := range entries {
		uri, ok := skillURI(p, d.Name())
		if !ok {
			continue
		}
		switch {
		case d.IsDir():
			children = append(children, Resource{URI: uri, Name: d.Name(), MIMEType: mimeTypeDirectory})
		case d.Type().IsRegular():
			r, known := snap.files[uri]
			if !known {
				r = Resource{URI: uri, Name: d.Name(), MIMEType: skillMIMEType(d.Name())}
				if info, err := d.Info(); err == nil {
					r.Size = info.Size()
				}
			}
			children = append(children, r)
		}
	}
	slices.SortFunc(children, func(a, b Resource) int { return strings.Compare(a.URI, b.URI) })
	return children, true
}
