package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Binding decodes a tool's or prompt's arguments object into a Go value. It
// follows encoding/json's rules with two differences: object keys match a
// struct field's name (its json tag name, else the Go field name) exactly,
// case included, so {"ms":0,"MS":3000} binds ms 0; and a mismatch is reported
// as an *ArgumentError that names the argument in JSON terms, never in Go
// terms. A JSON number with an integral value (250.0, 2.5e2) binds to an
// integer field, as JSON Schema's "integer" allows, where encoding/json
// refuses it. A field with the string option (`json:",string"`) takes a
// string holding a JSON value of its type, where encoding/json also takes
// what strconv parses ("007", "1.", "0x1p4"). The input is JSON text the
// transport already validated.
//
// What a Go type binds from and encodes to is worked out once per type into
// a typePlan (typeplan.go); bind.go holds the decoding.

// ArgumentError reports arguments that do not fit the Go value they are bound
// to or, for a typed tool, its inferred input schema. Its message names the
// argument and what it must be, e.g. `Invalid arguments: "ms" must be an
// integer`; the detail (Go types, a decoder's own error) goes to the
// runtime's log only.
type ArgumentError struct {
	// Path names the argument: "ms", "address.city", "items[2]"; empty for
	// the arguments object itself.
	Path string
	// Problem says what the argument must be: "must be an integer", "is
	// required", ...
	Problem string

	cause    string   // detail for the log
	segments []string // Path, innermost first, while the error unwinds
}

func (e *ArgumentError) Error() string {
	if e.Path == "" {
		return "Invalid arguments: the arguments " + e.Problem
	}
	return "Invalid arguments: " + strconv.Quote(e.Path) + " " + e.Problem
}

// within records that e happened inside the member or element named seg
// (a key, or "[i]").
func (e *ArgumentError) within(seg string) *ArgumentError {
	e.segments = append(e.segments, seg)
	return e
}

// finish sets Path from the segments recorded while unwinding.
func (e *ArgumentError) finish() *ArgumentError {
	var b strings.Builder
	for i := len(e.segments) - 1; i >= 0; i-- {
		seg := e.segments[i]
		if b.Len() > 0 && !strings.HasPrefix(seg, "[") {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	e.Path, e.segments = b.String(), nil
	return e
}

func mismatch(p *typePlan, raw []byte) *ArgumentError {
	return &ArgumentError{Problem: "must be " + p.want(), cause: fmt.Sprintf("JSON %s for Go type %v", describeJSONValue(raw), p.typ)}
}

// describeJSONValue names the kind of the JSON value raw, for the log.
func describeJSONValue(raw []byte) string {
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number " + string(raw)
}

// binder decodes one arguments object. Strict binding (a typed tool's)
// follows the inferred schema of the Go type where encoding/json is lenient:
// null only where the schema allows it, []byte only as a base64 string; with
// required set (the tool's input schema is the inferred one), the fields it
// requires must be present at every depth. With validated set, the input is
// strict JSON as decodeEnvelope accepts it (valid UTF-8, valid escapes), so
// strings are unescaped without being checked again.
type binder struct {
	strict    bool
	required  bool
	validated bool
}

// decodeString decodes the string token raw as decodeString does; ok is
// false when raw is not one.
func (b binder) decodeString(raw []byte) (string, bool) {
	if !b.validated {
		return decodeString(raw)
	}
	if raw[0] != '"' {
		return "", false
	}
	content := raw[1 : len(raw)-1]
	if bytes.IndexByte(content, '\\') < 0 {
		return string(content), true
	}
	return string(appendUnescaped(make([]byte, 0, len(content)), content)), true
}

// bind decodes the validated JSON value raw into v, which must be settable,
// following p (v's plan).
func (b binder) bind(raw []byte, v reflect.Value, p *typePlan) *ArgumentError {
	if err := b.value(raw, v, p); err != nil {
		return err.finish()
	}
	return nil
}

func (b binder) value(raw []byte, v reflect.Value, p *typePlan) *ArgumentError {
	if raw[0] == 'n' {
		return b.null(raw, v, p)
	}
	if p.kind == planPointer {
		if v.IsNil() {
			v.Set(reflect.New(p.typ.Elem()))
		}
		return b.value(raw, v.Elem(), p.elem)
	}
	if p.unmarshalJSON {
		return unmarshalCustom(raw, v, p)
	}
	if p.unmarshalText {
		s, ok := b.decodeString(raw)
		if !ok {
			return mismatch(p, raw)
		}
		if err := v.Addr().Interface().(interface{ UnmarshalText([]byte) error }).UnmarshalText([]byte(s)); err != nil {
			return &ArgumentError{Problem: "is not valid", cause: err.Error()}
		}
		return nil
	}
	switch p.kind {
	case planBool:
		if raw[0] != 't' && raw[0] != 'f' {
			return mismatch(p, raw)
		}
		v.SetBool(raw[0] == 't')
		return nil
	case planInt, planUint, planFloat:
		if raw[0] != '-' && !isJSONDigit(raw[0]) {
			return mismatch(p, raw)
		}
		return setNumber(raw, v, p)
	case planNumber:
		if raw[0] != '-' && !isJSONDigit(raw[0]) {
			return mismatch(p, raw)
		}
		v.SetString(string(raw))
		return nil
	case planString:
		s, ok := b.decodeString(raw)
		if !ok {
			return mismatch(p, raw)
		}
		v.SetString(s)
		return nil
	case planBytes:
		if raw[0] == '[' && !b.strict {
			return b.slice(raw, v, p)
		}
		s, ok := b.decodeString(raw)
		if !ok {
			return mismatch(p, raw)
		}
		data, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return &ArgumentError{Problem: "must be " + p.want(), cause: err.Error()}
		}
		v.SetBytes(data)
		return nil
	case planSlice:
		return b.slice(raw, v, p)
	case planArray:
		return b.array(raw, v, p)
	case planMap:
		return b.mapValue(raw, v, p)
	case planStruct:
		return b.structValue(raw, v, p)
	case planAny:
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			return &ArgumentError{Problem: "must be " + p.want(), cause: err.Error()}
		}
		v.Set(reflect.ValueOf(x))
		return nil
	}
	return &ArgumentError{Problem: "cannot be bound", cause: p.problem}
}

// null binds a JSON null as encoding/json does: nil for pointers, slices,
// maps and interfaces, the decoder's choice for a type with UnmarshalJSON,
// and no change otherwise; strict binding refuses null where the schema
// does.
func (b binder) null(raw []byte, v reflect.Value, p *typePlan) *ArgumentError {
	switch {
	case p.kind == planPointer:
		v.SetZero()
		return nil
	case b.strict && !p.nullable():
		return mismatch(p, raw)
	case p.unmarshalJSON:
		return unmarshalCustom(raw, v, p)
	case p.kind == planSlice || p.kind == planBytes || p.kind == planMap || p.kind == planAny:
		v.SetZero()
	}
	return nil
}

// unmarshalCustom hands raw to v's UnmarshalJSON method.
func unmarshalCustom(raw []byte, v reflect.Value, p *typePlan) *ArgumentError {
	if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
		problem := "is not valid"
		if p.isTime {
			problem = "must be " + p.want()
		}
		return &ArgumentError{Problem: problem, cause: err.Error()}
	}
	return nil
}

// setNumber binds the number literal raw to v, an integer or float of p.
func setNumber(raw []byte, v reflect.Value, p *typePlan) *ArgumentError {
	bits := p.typ.Bits()
	if p.kind == planFloat {
		f, err := strconv.ParseFloat(string(raw), bits)
		if err != nil {
			return &ArgumentError{Problem: "is out of range", cause: err.Error()}
		}
		v.SetFloat(f)
		return nil
	}
	neg, mag, ok := parseJSONInteger(raw)
	if !ok {
		return &ArgumentError{Problem: "must be " + p.want(), cause: "number " + string(raw) + " is not an integer"}
	}
	if p.kind == planUint {
		if neg && mag != 0 || bits < 64 && mag > 1<<bits-1 {
			return outOfRange(p, raw)
		}
		v.SetUint(mag)
		return nil
	}
	limit := uint64(1) << (bits - 1) // |min|; max is limit-1
	if neg && mag > limit || !neg && mag >= limit {
		return outOfRange(p, raw)
	}
	n := int64(mag)
	if neg {
		n = -n // for mag == limit, -n wraps to min, as intended
	}
	v.SetInt(n)
	return nil
}

func outOfRange(p *typePlan, raw []byte) *ArgumentError {
	lo, hi := integerRange(p)
	return &ArgumentError{Problem: fmt.Sprintf("must be an integer from %s to %s", lo, hi), cause: fmt.Sprintf("number %s overflows Go type %v", raw, p.typ)}
}

// integerRange returns the bounds of p's integer type as decimal text.
func integerRange(p *typePlan) (lo, hi string) {
	bits := p.typ.Bits()
	if p.kind == planUint {
		return "0", strconv.FormatUint(math.MaxUint64>>(64-bits), 10)
	}
	return strconv.FormatInt(math.MinInt64>>(64-bits), 10), strconv.FormatInt(math.MaxInt64>>(64-bits), 10)
}

// parseJSONInteger reads the validated number literal raw as a sign and a
// magnitude, exactly: ok is false when its value is not an integer, however
// far into a fraction its first non-zero digit stands (1.000…0001 is not an
// integer, 2.5e2 and 250.0 are). A magnitude too large for uint64 saturates,
// which every range check then refuses. It reads each byte once.
func parseJSONInteger(raw []byte) (neg bool, mag uint64, ok bool) {
	if raw[0] == '-' {
		neg, raw = true, raw[1:]
	}
	mant, exp := raw, 0
	if i := bytes.IndexAny(raw, "eE"); i >= 0 {
		mant, exp = raw[:i], parseJSONExponent(raw[i+1:])
	}
	whole, frac := mant, []byte(nil)
	if i := bytes.IndexByte(mant, '.'); i >= 0 {
		whole, frac = mant[:i], mant[i+1:]
	}
	digit := func(k int) byte {
		if k < len(whole) {
			return whole[k] - '0'
		}
		return frac[k-len(whole)] - '0'
	}
	// The decimal point stands before digit number point of whole+frac.
	n, point := len(whole)+len(frac), len(whole)+exp
	for k := max(point, 0); k < n; k++ {
		if digit(k) != 0 {
			return false, 0, false
		}
	}
	for k := 0; k < min(point, n); k++ {
		mag = appendDigit(mag, uint64(digit(k)))
	}
	for k := n; k < point && mag != 0 && mag != math.MaxUint64; k++ {
		mag = appendDigit(mag, 0)
	}
	return neg, mag, true
}

// appendDigit returns mag*10+d, saturating at math.MaxUint64.
func appendDigit(mag, d uint64) uint64 {
	if mag > (math.MaxUint64-d)/10 {
		return math.MaxUint64
	}
	return mag*10 + d
}

// parseJSONExponent reads a validated exponent (sign and digits), saturating
// at ±1<<30, far beyond any digit count a line can hold.
func parseJSONExponent(raw []byte) int {
	neg := false
	switch raw[0] {
	case '-':
		neg, raw = true, raw[1:]
	case '+':
		raw = raw[1:]
	}
	e := 0
	for _, c := range raw {
		if e < 1<<30 {
			e = e*10 + int(c-'0')
		}
	}
	if neg {
		return -e
	}
	return e
}

// elements calls fn for each element of the validated array raw, with its
// index, until fn returns an error.
func elements(raw []byte, fn func(i int, elem []byte) *ArgumentError) *ArgumentError {
	i := skipJSONSpace(raw, 1)
	for n := 0; i < len(raw) && raw[i] != ']'; n++ {
		end, ok := skipValue(raw, i)
		if !ok {
			return nil // cannot happen for validated input
		}
		if err := fn(n, raw[i:end]); err != nil {
			return err.within("[" + strconv.Itoa(n) + "]")
		}
		if i = skipJSONSpace(raw, end); i < len(raw) && raw[i] == ',' {
			i = skipJSONSpace(raw, i+1)
		}
	}
	return nil
}

func countElements(raw []byte) int {
	n := 0
	elements(raw, func(int, []byte) *ArgumentError { n++; return nil })
	return n
}

// slice binds a JSON array to a slice, reusing its backing array when large
// enough; [] gives an empty, non-nil slice.
func (b binder) slice(raw []byte, v reflect.Value, p *typePlan) *ArgumentError {
	if raw[0] != '[' {
		return mismatch(p, raw)
	}
	n := countElements(raw)
	if v.Cap() >= n && !v.IsNil() {
		v.SetLen(n)
		for i := range n {
			v.Index(i).SetZero()
		}
	} else {
		v.Set(reflect.MakeSlice(p.typ, n, n))
	}
	return elements(raw, func(i int, elem []byte) *ArgumentError { return b.value(elem, v.Index(i), p.elem) })
}

// array binds a JSON array to a Go array: extra elements are ignored,
// missing ones zeroed.
func (b binder) array(raw []byte, v reflect.Value, p *typePlan) *ArgumentError {
	if raw[0] != '[' {
		return mismatch(p, raw)
	}
	n := 0
	err := elements(raw, func(i int, elem []byte) *ArgumentError {
		n = i + 1
		if i >= v.Len() {
			return nil
		}
		return b.value(elem, v.Index(i), p.elem)
	})
	for i := n; i < v.Len(); i++ {
		v.Index(i).SetZero()
	}
	return err
}

// mapValue binds a JSON object to a map, adding to a non-nil map; each
// value is decoded into a fresh element.
func (b binder) mapValue(raw []byte, v reflect.Value, p *typePlan) *ArgumentError {
	if raw[0] != '{' {
		return mismatch(p, raw)
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(p.typ))
	}
	keyType := p.typ.Key()
	members := newMemberScanner(raw)
	for {
		rawKey, escaped, value, ok := members.next()
		if !ok {
			return nil
		}
		var buf [64]byte
		name := string(unescapedKey(&buf, rawKey, escaped))
		key := reflect.New(keyType).Elem()
		switch p.mapKey {
		case planString:
			key.SetString(name)
		case planInt, planUint:
			kp := &typePlan{typ: keyType, kind: p.mapKey}
			if !isJSONInteger(name) {
				return (&ArgumentError{Problem: "must have integer keys", cause: fmt.Sprintf("key %q for Go type %v", name, p.typ)})
			}
			if err := setNumber([]byte(name), key, kp); err != nil {
				return err.within(name)
			}
		}
		elem := reflect.New(p.typ.Elem()).Elem()
		if err := b.value(value, elem, p.elem); err != nil {
			return err.within(name)
		}
		v.SetMapIndex(key, elem)
	}
}

// isJSONInteger reports whether s is an optional '-' and decimal digits.
func isJSONInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := range len(s) {
		if !isJSONDigit(s[i]) {
			return false
		}
	}
	return true
}

// structValue binds a JSON object to a struct: members whose key is exactly
// a field's name bind to it, others are ignored; a field the object lacks
// keeps its value. Strict binding refuses an object that lacks a required
// field.
func (b binder) structValue(raw []byte, v reflect.Value, p *typePlan) *ArgumentError {
	if raw[0] != '{' {
		return mismatch(p, raw)
	}
	var seen uint64 // bit i: required field i was present (p.required has at most 64)
	members := newMemberScanner(raw)
	for {
		rawKey, escaped, value, ok := members.next()
		if !ok {
			break
		}
		var buf [64]byte
		i := p.field(unescapedKey(&buf, rawKey, escaped))
		if i < 0 {
			continue
		}
		f := &p.fields[i]
		if f.requiredBit >= 0 {
			seen |= 1 << f.requiredBit
		}
		fv, err := settableField(v, f)
		if err == nil {
			err = b.field(value, fv, f)
		}
		if err != nil {
			return err.within(f.name)
		}
	}
	if b.required && p.requiredCount > 0 && seen != 1<<p.requiredCount-1 {
		for i := range p.fields {
			if f := &p.fields[i]; f.requiredBit >= 0 && seen&(1<<f.requiredBit) == 0 {
				return (&ArgumentError{Problem: "is required", cause: "member absent"}).within(f.name)
			}
		}
	}
	return nil
}

// settableField returns the field f of struct v, allocating the embedded
// structs on its way that are nil pointers.
func settableField(v reflect.Value, f *fieldPlan) (reflect.Value, *ArgumentError) {
	for _, i := range f.index[:len(f.index)-1] {
		v = v.Field(i)
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, &ArgumentError{Problem: "cannot be bound", cause: "embedded pointer to an unexported struct type " + v.Type().String()}
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
	}
	return v.Field(f.index[len(f.index)-1]), nil
}

// field binds value to the field fv of plan f, with its `string` option.
func (b binder) field(value []byte, fv reflect.Value, f *fieldPlan) *ArgumentError {
	if !f.quoted || value[0] == 'n' {
		return b.value(value, fv, f.plan)
	}
	inner, ok := b.decodeString(value)
	if !ok {
		return &ArgumentError{Problem: "must be a string", cause: "the string option wants a JSON string, got " + describeJSONValue(value)}
	}
	p := f.plan
	if p.kind == planPointer {
		if fv.IsNil() {
			fv.Set(reflect.New(p.typ.Elem()))
		}
		fv, p = fv.Elem(), p.elem
	}
	if p.kind == planString {
		// The text of a string field is itself a JSON string.
		s, ok := decodeString([]byte(inner))
		if !ok {
			return &ArgumentError{Problem: "must be a string holding a JSON string", cause: "the string option: " + strconv.Quote(inner)}
		}
		fv.SetString(s)
		return nil
	}
	if !json.Valid([]byte(inner)) || inner != strings.TrimSpace(inner) || inner == "" || inner[0] == '"' || inner[0] == '{' || inner[0] == '[' || inner[0] == 'n' {
		return &ArgumentError{Problem: "must be a string holding " + p.want(), cause: "the string option: " + strconv.Quote(inner)}
	}
	b.validated = false // inner passed json.Valid only
	return b.value([]byte(inner), fv, p)
}
