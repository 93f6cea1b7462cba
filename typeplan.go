package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// planKind is how a Go type is bound, encoded and described in JSON.
type planKind uint8

const (
	planUnsupported planKind = iota // chan, func, complex, non-empty interface, ...
	planBool
	planInt
	planUint
	planFloat
	planNumber // json.Number
	planString
	planBytes // []byte: a base64 string
	planSlice
	planArray
	planMap // string or integer keys
	planStruct
	planPointer
	planAny // an empty interface: any JSON value
)

// typePlan is what binding, encoding and schema inference need to know about
// one Go type, worked out once. Plans of recursive types refer to
// themselves. A plan is immutable once its cache publishes it.
type typePlan struct {
	typ    reflect.Type
	kind   planKind
	elem   *typePlan   // pointer, slice, array, map
	mapKey planKind    // map: planString, planInt or planUint
	fields []fieldPlan // struct, in encoding/json's order
	byName map[string]int
	// requiredCount is the number of fields without omitempty or omitzero
	// (their requiredBit is 0 to requiredCount-1), at most 64.
	requiredCount int

	unmarshalJSON bool // *T implements json.Unmarshaler
	unmarshalText bool // *T implements encoding.TextUnmarshaler (and not json.Unmarshaler)
	marshalJSON   bool // T or *T implements json.Marshaler
	marshalText   bool // T or *T implements encoding.TextMarshaler (and not json.Marshaler)
	marshalValue  bool // T itself implements one of them (not only *T)
	isTime        bool // time.Time

	problem string // planUnsupported: why
}

// fieldPlan is one JSON member of a struct: a field, possibly promoted from
// embedded structs.
type fieldPlan struct {
	name        string
	quotedName  string // `"name":`, encoded
	index       []int  // as reflect.Value.FieldByIndex
	plan        *typePlan
	omitEmpty   bool
	omitZero    bool
	quoted      bool // the `string` option, on a bool, number or string field
	description string
	requiredBit int // -1 when optional
}

// want names the JSON values p binds from, for messages: "an integer".
func (p *typePlan) want() string {
	switch {
	case p.isTime:
		return "a date-time string"
	case p.unmarshalText:
		return "a string"
	case p.unmarshalJSON:
		return "a valid value"
	}
	switch p.kind {
	case planBool:
		return "a boolean"
	case planInt, planUint:
		return "an integer"
	case planFloat, planNumber:
		return "a number"
	case planString:
		return "a string"
	case planBytes:
		return "a base64-encoded string"
	case planSlice, planArray:
		return "an array"
	case planMap, planStruct:
		return "an object"
	case planPointer:
		return p.elem.want()
	}
	return "a value of a supported type"
}

// nullable reports whether null is a valid value of p's schema: pointers,
// slices, maps, interfaces and the types that decode JSON themselves (their
// schema does not constrain the value).
func (p *typePlan) nullable() bool {
	switch p.kind {
	case planPointer, planSlice, planBytes, planMap, planAny:
		return true
	}
	return p.unmarshalJSON && !p.isTime
}

// field returns the index in p.fields of the member named exactly name, or
// -1.
func (p *typePlan) field(name []byte) int {
	if p.byName != nil {
		if i, ok := p.byName[string(name)]; ok {
			return i
		}
		return -1
	}
	for i := range p.fields {
		if p.fields[i].name == string(name) {
			return i
		}
	}
	return -1
}

// fieldIndexThreshold is the number of fields from which a struct's plan
// looks members up in a map rather than by comparing each name.
const fieldIndexThreshold = 9

// planCache holds the plans of the types a Runtime binds and encodes. Safe for
// concurrent use; the zero value is ready.
type planCache struct {
	plans sync.Map   // reflect.Type → *typePlan, complete plans only
	mu    sync.Mutex // serializes building
}

// planFor returns the plan of t, building and caching it (and the plans it
// refers to) the first time. c may be nil: the plan is then built and not
// kept.
func (c *planCache) planFor(t reflect.Type) *typePlan {
	if c == nil {
		return newPlanBuilder(nil).plan(t)
	}
	if p, ok := c.plans.Load(t); ok {
		return p.(*typePlan)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.plans.Load(t); ok {
		return p.(*typePlan)
	}
	b := newPlanBuilder(c)
	p := b.plan(t)
	for typ, built := range b.built {
		c.plans.Store(typ, built)
	}
	return p
}

// planBuilder builds the plans of one type graph, reusing those cache (if
// any) holds; built holds every plan started, so a recursive type refers to
// its own plan.
type planBuilder struct {
	cache *planCache
	built map[reflect.Type]*typePlan
}

func newPlanBuilder(cache *planCache) *planBuilder {
	return &planBuilder{cache: cache, built: make(map[reflect.Type]*typePlan)}
}

func (b *planBuilder) plan(t reflect.Type) *typePlan {
	if p, ok := b.built[t]; ok {
		return p
	}
	if b.cache != nil {
		if p, ok := b.cache.plans.Load(t); ok {
			return p.(*typePlan)
		}
	}
	p := &typePlan{typ: t}
	b.built[t] = p
	ptr := reflect.PointerTo(t)
	jsonUnmarshaler := reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler := reflect.TypeFor[encoding.TextUnmarshaler]()
	p.unmarshalJSON = t.Kind() != reflect.Pointer && ptr.Implements(jsonUnmarshaler)
	p.unmarshalText = !p.unmarshalJSON && t.Kind() != reflect.Pointer && ptr.Implements(textUnmarshaler)
	p.marshalJSON = t.Kind() != reflect.Pointer && ptr.Implements(reflect.TypeFor[json.Marshaler]())
	p.marshalText = !p.marshalJSON && t.Kind() != reflect.Pointer && ptr.Implements(reflect.TypeFor[encoding.TextMarshaler]())
	p.marshalValue = t.Implements(reflect.TypeFor[json.Marshaler]()) || t.Implements(reflect.TypeFor[encoding.TextMarshaler]())
	p.isTime = t == reflect.TypeFor[time.Time]()

	p.kind = scalarKind(t.Kind())
	switch t.Kind() {
	case reflect.String:
		if t == reflect.TypeFor[json.Number]() {
			p.kind = planNumber
		}
	case reflect.Slice:
		p.kind, p.elem = planSlice, b.plan(t.Elem())
		if e := p.elem; e.kind == planUint && t.Elem().Kind() == reflect.Uint8 && !e.unmarshalJSON && !e.unmarshalText && !e.marshalJSON && !e.marshalText {
			p.kind = planBytes
		}
	case reflect.Array:
		p.kind, p.elem = planArray, b.plan(t.Elem())
	case reflect.Map:
		p.kind, p.elem = planMap, b.plan(t.Elem())
		switch p.mapKey = scalarKind(t.Key().Kind()); p.mapKey {
		case planString, planInt, planUint:
		default:
			p.kind, p.problem = planUnsupported, fmt.Sprintf("map key type %v is neither a string nor an integer", t.Key())
		}
	case reflect.Pointer:
		p.kind, p.elem = planPointer, b.plan(t.Elem())
	case reflect.Interface:
		if t.NumMethod() == 0 {
			p.kind = planAny
		} else {
			p.problem = fmt.Sprintf("interface type %v has methods", t)
		}
	case reflect.Struct:
		p.kind = planStruct
		b.structFields(p)
	default:
		if p.kind == planUnsupported {
			p.problem = fmt.Sprintf("%v values have no JSON form", t.Kind())
		}
	}
	return p
}

// scalarKind returns the plan kind of the values of kind k that are JSON
// booleans, numbers or strings, planUnsupported for the others.
func scalarKind(k reflect.Kind) planKind {
	switch k {
	case reflect.Bool:
		return planBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return planInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return planUint
	case reflect.Float32, reflect.Float64:
		return planFloat
	case reflect.String:
		return planString
	}
	return planUnsupported
}

// structFields fills in p's fields by encoding/json's rules: exported fields
// (and those promoted from embedded structs) by their json tag name, else
// their Go name; "-" skips a field; of several fields of one name the
// shallowest wins, then the only tagged one, else none.
func (b *planBuilder) structFields(p *typePlan) {
	type candidate struct {
		fieldPlan
		typ    reflect.Type
		tagged bool
	}
	type embedded struct {
		typ   reflect.Type
		index []int
		count int // times met at its level; more than once annihilates its fields
	}
	var found []candidate
	taken := map[string]bool{} // names met at shallower levels, kept or not
	level := []embedded{{typ: p.typ, count: 1}}
	visited := map[reflect.Type]bool{}
	for len(level) > 0 {
		var next []embedded
		var atLevel []candidate
		for _, e := range level {
			if visited[e.typ] {
				continue
			}
			visited[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if sf.Anonymous {
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !isValidJSONTagName(name) {
					name = ""
				}
				index := append(slices.Clip(e.index), i)
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					if j := slices.IndexFunc(next, func(n embedded) bool { return n.typ == ft }); j >= 0 {
						next[j].count++
					} else {
						next = append(next, embedded{typ: ft, index: index, count: 1})
					}
					continue
				}
				c := candidate{typ: sf.Type, tagged: name != ""}
				c.name = name
				if c.name == "" {
					c.name = sf.Name
				}
				c.index = index
				c.description = sf.Tag.Get("jsonschema")
				for opt := range strings.SplitSeq(opts, ",") {
					switch opt {
					case "omitempty":
						c.omitEmpty = true
					case "omitzero":
						c.omitZero = true
					case "string":
						c.quoted = scalarKind(ft.Kind()) != planUnsupported
					}
				}
				atLevel = append(atLevel, c)
				if e.count > 1 {
					atLevel = append(atLevel, c) // a duplicate: the name is ambiguous
				}
			}
		}
		found = append(found, dominantFields(atLevel, taken, func(c candidate) (string, bool) { return c.name, c.tagged })...)
		level = next
	}
	slices.SortFunc(found, func(a, b candidate) int { return slices.Compare(a.index, b.index) })
	p.fields = make([]fieldPlan, len(found))
	for i, c := range found {
		f := c.fieldPlan
		f.plan = b.plan(c.typ)
		f.quotedName = string(appendJSONString(nil, f.name)) + ":"
		f.requiredBit = -1
		if !f.omitEmpty && !f.omitZero && p.requiredCount < 64 {
			f.requiredBit = p.requiredCount
			p.requiredCount++
		}
		p.fields[i] = f
	}
	if len(p.fields) >= fieldIndexThreshold {
		p.byName = make(map[string]int, len(p.fields))
		for i, f := range p.fields {
			p.byName[f.name] = i
		}
	}
}

// dominantFields returns the fields of one embedding depth that survive, and
// adds their names to taken: a name taken at a shallower depth is hidden; of
// several fields with one name, the only tagged one wins, and if there is
// none or more than one, all are dropped (the name still hides deeper
// fields).
func dominantFields[F any](level []F, taken map[string]bool, key func(F) (name string, tagged bool)) []F {
	byName := map[string][]F{}
	var order []string
	for _, f := range level {
		name, _ := key(f)
		if taken[name] {
			continue
		}
		if _, ok := byName[name]; !ok {
			order = append(order, name)
		}
		byName[name] = append(byName[name], f)
	}
	var out []F
	for _, name := range order {
		taken[name] = true
		fs := byName[name]
		if len(fs) == 1 {
			out = append(out, fs[0])
			continue
		}
		var tagged []F
		for _, f := range fs {
			if _, t := key(f); t {
				tagged = append(tagged, f)
			}
		}
		if len(tagged) == 1 {
			out = append(out, tagged[0])
		}
	}
	return out
}

// isValidJSONTagName reports whether name may be a json tag's name, as
// encoding/json accepts it.
func isValidJSONTagName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
