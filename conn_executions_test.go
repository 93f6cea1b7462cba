package main

import (
	"slices"
	"strings"
	"testing"
)

// executionsByID behaves as a map of executions by id, whether it holds one
// inline or a map: through puts and removes that go back and forth between
// one, none and several, and removes inside its loop.
func TestExecutionsByID(t *testing.T) {
	var table executionsByID
	model := map[string]*execution{}
	ex := func(id string) *execution { return &execution{id: id} }
	check := func(step string) {
		t.Helper()
		if table.len() != len(model) {
			t.Fatalf("%s: len %d, want %d", step, table.len(), len(model))
		}
		for _, id := range []string{`"a"`, `"b"`, `"c"`, "1"} {
			if got := table.get(id); got != model[id] {
				t.Fatalf("%s: get(%s) = %v, want %v", step, id, got, model[id])
			}
		}
		var ids []string
		for e := range table.all() {
			ids = append(ids, e.id)
		}
		slices.Sort(ids)
		want := slices.Sorted(func(yield func(string) bool) {
			for id := range model {
				if !yield(id) {
					return
				}
			}
		})
		if !slices.Equal(ids, want) {
			t.Fatalf("%s: all yields %v, want %v", step, ids, want)
		}
	}
	steps := []string{`+"a"`, `-"b"`, `-"a"`, `+"a"`, `+"b"`, `-"a"`, `+"c"`, `+1`, `-"b"`, `-"c"`, `-1`, `+"a"`}
	for _, step := range steps {
		id := step[1:]
		if strings.HasPrefix(step, "+") {
			e := ex(id)
			table.put(e)
			model[id] = e
		} else {
			table.remove(id)
			delete(model, id)
		}
		check(step)
	}
	again := ex(`"a"`)
	table.put(again)
	model[`"a"`] = again
	check(`+"a" again`)

	// Removing inside the loop, from one held and from several.
	for _, ids := range [][]string{{`"x"`}, {`"x"`, `"y"`, `"z"`}} {
		var table executionsByID
		for _, id := range ids {
			table.put(ex(id))
		}
		n := 0
		for e := range table.all() {
			table.remove(e.id)
			n++
		}
		if n != len(ids) || table.len() != 0 {
			t.Fatalf("removing %v in the loop: %d yielded, %d left", ids, n, table.len())
		}
	}
}
