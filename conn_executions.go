package main

import "iter"

// executionsByID holds a connection's tracked executions by canonical id;
// owned by the connection's owner. One execution is held inline and a map
// is made only when two are held at once, so that a connection that serves
// one request at a time (every 2026-07-28 POST's) makes none: a map and
// its first group were a tenth of what such a POST allocated.
type executionsByID struct {
	one *execution            // the only one held, while m is nil
	m   map[string]*execution // every one held, once two were held at once
}

// get returns the execution held under id, nil for none.
func (t *executionsByID) get(id string) *execution {
	if t.m != nil {
		return t.m[id]
	}
	if t.one != nil && t.one.id == id {
		return t.one
	}
	return nil
}

// put holds ex under ex.id, replacing what was held under it.
func (t *executionsByID) put(ex *execution) {
	switch {
	case t.m != nil:
		t.m[ex.id] = ex
	case t.one == nil || t.one.id == ex.id:
		t.one = ex
	default:
		t.m = map[string]*execution{t.one.id: t.one, ex.id: ex}
		t.one = nil
	}
}

// remove drops what is held under id.
func (t *executionsByID) remove(id string) {
	if t.m != nil {
		delete(t.m, id)
	} else if t.one != nil && t.one.id == id {
		t.one = nil
	}
}

// len returns how many executions are held.
func (t *executionsByID) len() int {
	if t.m != nil {
		return len(t.m)
	}
	if t.one != nil {
		return 1
	}
	return 0
}

// all yields the executions held, in no particular order. As with a map's
// range, the loop's body may remove any of them; one it puts may or may not
// be yielded.
func (t *executionsByID) all() iter.Seq[*execution] {
	return func(yield func(*execution) bool) {
		if t.m == nil {
			if t.one != nil {
				yield(t.one)
			}
			return
		}
		for _, ex := range t.m {
			if !yield(ex) {
				return
			}
		}
	}
}
