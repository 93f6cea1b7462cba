package main

import (
	"slices"
	"strings"
	"sync/atomic"
)

// index is one kind of catalog entry, by key and in key order (byte-wise).
// It is guarded by the Runtime's mutex. Writers replace list and keys with
// new slices and never modify them in place, so a reader may keep a
// sub-slice after releasing the lock.
type index[E any] struct {
	byKey map[string]E
	list  []E
	keys  []string // keys[i] is the key of list[i]
	// generation counts the changes to the list; a cursor issued for one
	// generation is stale in any other.
	generation uint64
}

func newIndex[E any]() index[E] { return index[E]{byKey: map[string]E{}} }

// add inserts e under key; false when the key is taken.
func (ix *index[E]) add(key string, e E) bool {
	if _, taken := ix.byKey[key]; taken {
		return false
	}
	i, _ := slices.BinarySearch(ix.keys, key)
	ix.keys = slices.Insert(slices.Clip(ix.keys), i, key)
	ix.list = slices.Insert(slices.Clip(ix.list), i, e)
	ix.byKey[key] = e
	ix.generation++
	return true
}

// remove deletes the entry under key; false when there is none.
func (ix *index[E]) remove(key string) bool {
	if _, ok := ix.byKey[key]; !ok {
		return false
	}
	i, _ := slices.BinarySearch(ix.keys, key)
	ix.keys = slices.Concat(ix.keys[:i], ix.keys[i+1:])
	ix.list = slices.Concat(ix.list[:i], ix.list[i+1:])
	delete(ix.byKey, key)
	ix.generation++
	return true
}

// replace swaps the entry under an existing key for e without changing what
// is listed (the generation stays).
func (ix *index[E]) replace(key string, e E) {
	i, _ := slices.BinarySearch(ix.keys, key)
	ix.list = slices.Clone(ix.list)
	ix.list[i] = e
	ix.byKey[key] = e
}

// snapshot returns the list and its generation, consistent with each other.
func (ix *index[E]) snapshot() ([]E, uint64) { return ix.list, ix.generation }

// catalog is everything a Runtime serves. Entries are immutable once added:
// a change replaces the entry.
type catalog struct {
	tools     index[*toolEntry]
	prompts   index[*promptEntry]
	resources index[*resourceEntry]
	templates index[*templateEntry]
	// completers counts registered completion handlers; completions are
	// advertised while it is positive.
	completers int
	// taskTools counts registered tools that declare task support; the
	// tasks extension is advertised while it is positive.
	taskTools int
	// headerTools counts registered tools whose input schemas name an
	// x-mcp-header (Runtime.paramHeaderTools); written under Runtime.mu.
	headerTools atomic.Int32
}

func newCatalog() catalog {
	return catalog{
		tools:     newIndex[*toolEntry](),
		prompts:   newIndex[*promptEntry](),
		resources: newIndex[*resourceEntry](),
		templates: newIndex[*templateEntry](),
	}
}

// isToolName reports whether name follows the MCP tool name rules: 1 to 128
// characters of A-Z, a-z, 0-9, '_', '-' and '.'.
func isToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	return strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) < 0
}

// listPage returns the page of ix that c's cursor names, each entry
// converted by convert, and the cursor of the next page ("" on the last).
// With requireEntries, an empty list means the method is not served. With a
// Policy, the entries c's principal may not see (item describes each to it)
// are left out before paging.
func listPage[E, T any](rt *Runtime, c *methodCall, ix *index[E], kind listKind, requireEntries bool, item func(E) CatalogItem, convert func(E) T) ([]T, string, *RPCError) {
	rt.mu.RLock()
	list, generation := ix.snapshot()
	rt.mu.RUnlock()
	if requireEntries && len(list) == 0 {
		return nil, "", methodNotFound(c.req.Method)
	}
	cursor, rerr := cursorParam(c.params.cursor)
	if rerr != nil {
		return nil, "", rerr
	}
	if rt.policy != nil {
		list = slices.DeleteFunc(slices.Clone(list), func(e E) bool { return !rt.visible(c, item(e)) })
	}
	page, next, rerr := paginate(rt.cursors, kind, list, generation, cursor, rt.pageSize, c.binding())
	if rerr != nil {
		return nil, "", rerr
	}
	out := make([]T, len(page))
	for i, e := range page {
		out[i] = convert(e)
	}
	return out, next, nil
}
