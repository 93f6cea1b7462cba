package main

// Reading the files of skills safely (no path leaves the fs.FS's root, no
// symbolic link or non-regular file is opened, memory bounded by the file's
// limit), their digests (computed once, kept while size and modification
// time stay), and resources/read of them.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// errNotRegular refuses a path that is, or passes through, a symbolic link,
// or that is not a regular file.
var errNotRegular = errors.New("not a regular file inside the skills root")

// checkRegular refuses p unless it is a regular file (a directory, with
// dir) that fsys serves without following a symbolic link: when fsys can
// tell links (fs.ReadLinkFS: an os.Root's FS, os.DirFS), neither p nor a
// directory on the way to it may be one, so that a link swapped in after
// the scan is not followed. Checking before opening matters: opening a
// named pipe would block.
func checkRegular(fsys fs.FS, p string, dir bool) (fs.FileInfo, error) {
	var info fs.FileInfo
	if links, ok := fsys.(fs.ReadLinkFS); ok {
		for i := 0; i <= len(p); i++ {
			if i < len(p) && p[i] != '/' {
				continue
			}
			fi, err := links.Lstat(p[:i])
			if err != nil {
				return nil, err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return nil, fmt.Errorf("%s: %w", p[:i], errNotRegular)
			}
			info = fi
		}
	} else {
		fi, err := fs.Stat(fsys, p)
		if err != nil {
			return nil, err
		}
		info = fi
	}
	if dir && !info.IsDir() || !dir && !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", p, errNotRegular)
	}
	return info, nil
}

// openRegular opens the regular file p of fsys (see checkRegular) and
// returns it with its FileInfo as opened.
func openRegular(fsys fs.FS, p string) (fs.File, fs.FileInfo, error) {
	if !fs.ValidPath(p) {
		return nil, nil, fmt.Errorf("%q: %w", p, errNotRegular)
	}
	if _, err := checkRegular(fsys, p, false); err != nil {
		return nil, nil, err
	}
	f, err := fsys.Open(p)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", p, errNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// readSkillFile reads the regular file p of fsys, at most limit bytes: a
// larger file is an error, unless prefix is set, when its first limit bytes
// are returned. Memory is bounded by limit whatever the file's size.
func readSkillFile(fsys fs.FS, p string, limit int64, prefix bool) ([]byte, error) {
	data, _, err := readSkillFileHashed(fsys, p, limit, prefix, nil)
	return data, err
}

// readSkillFileHashed is readSkillFile that also hashes what it read with h
// (when not nil) and returns the file's FileInfo as opened.
func readSkillFileHashed(fsys fs.FS, p string, limit int64, prefix bool, h hash.Hash) ([]byte, fs.FileInfo, error) {
	f, info, err := openRegular(fsys, p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if info.Size() > limit && !prefix {
		return nil, nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit", p, info.Size(), limit)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(info.Size(), limit)) + 1)
	var w io.Writer = &buf
	if h != nil {
		w = io.MultiWriter(&buf, h)
	}
	n, err := io.Copy(w, io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if n > limit {
		if !prefix {
			return nil, nil, fmt.Errorf("%s grew over the %d-byte limit while read", p, limit)
		}
		return buf.Bytes()[:limit], info, nil
	}
	return buf.Bytes(), info, nil
}

// digestCache keeps each file's digest with the size and modification time
// it was computed for. Its mutex guards only the map; hashing happens
// outside it.
type digestCache struct {
	mu     sync.Mutex
	byPath map[string]digestRecord
}

type digestRecord struct {
	size    int64
	modTime time.Time
	digest  string // "sha256:<hex>"
}

func (c *digestCache) lookup(p string, size int64, modTime time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.byPath[p]
	if !ok || r.size != size || !r.modTime.Equal(modTime) {
		return "", false
	}
	return r.digest, true
}

// store records digest for p and reports whether it replaced a different
// digest of the same path.
func (c *digestCache) store(p string, r digestRecord) (changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byPath == nil {
		c.byPath = map[string]digestRecord{}
	}
	old, had := c.byPath[p]
	c.byPath[p] = r
	return had && old.digest != r.digest
}

func sha256Digest(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// digest returns the digest and size of f as it is now: the cached digest
// while f's size and modification time are those it was computed for,
// otherwise the file is hashed again (streamed, never held whole).
func (s *Skills) digest(f skillFile) (string, int64, error) {
	if d, ok := s.digests.lookup(f.path, f.size, f.modTime); ok {
		return d, f.size, nil
	}
	file, info, err := openRegular(s.fsys, f.path)
	if err != nil {
		return "", 0, err
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(file, MaxSkillBytes+1))
	if err != nil {
		return "", 0, err
	}
	if n > MaxSkillBytes {
		return "", 0, fmt.Errorf("%s is over the %d-byte limit", f.path, MaxSkillBytes)
	}
	d := sha256Digest(h)
	if n == info.Size() {
		s.storeDigest(f.path, digestRecord{size: n, modTime: info.ModTime(), digest: d}, f.uri)
	}
	return d, n, nil
}

// storeDigest records a digest; when it replaces another one of the same
// file, subscribers of the file's URI are told the resource changed.
func (s *Skills) storeDigest(p string, r digestRecord, uri string) {
	if s.digests.store(p, r) {
		s.rt.NotifyResourceUpdated(uri)
	}
}

// readHandler serves resources/read of the skill file at uri. The file is
// read when asked for (up to MaxSkillBytes) and hashed as it is read: the
// contents carry _meta["io.modelcontextprotocol.skills/digest"], the digest
// of exactly the bytes served, and a digest that differs from the one kept
// replaces it, so the next skills/get or skills/list entry shows it.
func (s *Skills) readHandler(uri string) ResourceHandler {
	return func(ctx context.Context, req *HandlerRequest) (*ResourceResult, error) {
		snap := s.snap.Load()
		r, ok := snap.files[uri]
		p, pathOK := skillPathOf(uri)
		if !ok || !pathOK {
			return nil, ErrResourceNotFound
		}
		h := sha256.New()
		data, info, err := readSkillFileHashed(s.fsys, p, MaxSkillBytes, false, h)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, ErrResourceNotFound
			}
			s.logger.WarnContext(ctx, "skills: refusing to serve a file", "uri", uri, "err", err)
			return nil, &RPCError{Code: CodeInvalidParams, Message: "Skill file cannot be served", Data: map[string]string{"uri": uri}}
		}
		d := sha256Digest(h)
		if int64(len(data)) == info.Size() {
			s.storeDigest(p, digestRecord{size: info.Size(), modTime: info.ModTime(), digest: d}, uri)
		}
		meta, err := marshalJSON(map[string]string{skillMetaPrefix + "digest": d})
		if err != nil {
			return nil, err
		}
		rc := ResourceContents{URI: uri, MIMEType: r.MIMEType, Meta: meta}
		if isText(data) {
			rc.Text = string(data)
			if rc.MIMEType == "" {
				rc.MIMEType = "text/plain"
			}
		} else {
			rc.Blob = data
			if rc.MIMEType == "" || strings.HasPrefix(rc.MIMEType, "text/") {
				rc.MIMEType = "application/octet-stream"
			}
		}
		return &ResourceResult{Contents: []ResourceContents{rc}}, nil
	}
}

// isText reports whether data is served as text: valid UTF-8 without NUL.
func isText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// skillMIMEType is the MIME type of a skill file by its extension, from a
// fixed table so that every machine answers alike; "" when unknown (the
// read then says text/plain or application/octet-stream by content).
func skillMIMEType(p string) string {
	if path.Base(p) == skillFileName {
		return "text/markdown"
	}
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".markdown":
		return "text/markdown"
	case ".txt":
		return "text/plain"
	case ".py":
		return "text/x-python"
	case ".sh":
		return "text/x-shellscript"
	case ".js", ".mjs":
		return "text/javascript"
	case ".ts":
		return "text/x-typescript"
	case ".go":
		return "text/x-go"
	case ".html", ".htm":
		return "text/html"
	case ".css":
		return "text/css"
	case ".csv":
		return "text/csv"
	case ".json":
		return "application/json"
	case ".yaml", ".yml":
		return "application/yaml"
	case ".toml":
		return "application/toml"
	case ".xml":
		return "application/xml"
	case ".pdf":
		return "application/pdf"
	case ".zip":
		return "application/zip"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".svg":
		return "image/svg+xml"
	}
	return ""
}

// skillEntryJSON is a Skill entry of skills/list and skills/get.
type skillEntryJSON struct {
	URI         string          `json:"uri"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	Resources   any             `json:"resources"` // []skillResourceJSON or "dynamic"
}

type skillResourceJSON struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// entryJSON returns e's Skill entry with every file's current digest; an
// error when a file cannot be hashed (the entry is then stale: the caller
// refreshes it).
func (s *Skills) entryJSON(e *skillEntry) (skillEntryJSON, error) {
	out := skillEntryJSON{URI: e.uri, Frontmatter: e.frontmatter, Resources: "dynamic"}
	if e.dynamic {
		return out, nil
	}
	resources := make([]skillResourceJSON, len(e.files))
	var total int64
	for i, f := range e.files {
		d, n, err := s.digest(f)
		if err != nil {
			return skillEntryJSON{}, err
		}
		if n != f.size {
			return skillEntryJSON{}, fmt.Errorf("%s changed while hashed", f.path)
		}
		total += n
		resources[i] = skillResourceJSON{URI: f.uri, Digest: d, Size: n}
	}
	if total > MaxSkillBytes {
		return skillEntryJSON{}, fmt.Errorf("the skill's files exceed %d bytes", MaxSkillBytes)
	}
	out.Resources = resources
	return out, nil
}
