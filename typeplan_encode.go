package main

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
)

// appendJSON appends the encoding of v, a value of p's type, to dst as
// marshalJSON would produce it for a pointer to v: encoding/json's encoding (omitempty,
// omitzero and string options, sorted map keys, base64 []byte, null for nil
// pointers, slices and maps) with HTML escaping off, compact and pure ASCII.
// Types with their own MarshalJSON or MarshalText, and the values of
// interfaces, are encoded by marshalJSON. It fails for NaN and infinite
// floats, an invalid json.Number and a failing marshaler. p must not be
// recursive (AddTypedTool refuses those types).
func (p *typePlan) appendJSON(dst []byte, v reflect.Value) ([]byte, error) {
	if p.marshalJSON || p.marshalText {
		// As encoding/json: an addressable value's pointer methods count.
		if v.CanAddr() {
			return appendMarshaled(dst, v.Addr().Interface())
		}
		if p.marshalValue {
			return appendMarshaled(dst, v.Interface())
		}
	}
	switch p.kind {
	case planBool:
		return strconv.AppendBool(dst, v.Bool()), nil
	case planInt:
		return strconv.AppendInt(dst, v.Int(), 10), nil
	case planUint:
		return strconv.AppendUint(dst, v.Uint(), 10), nil
	case planFloat:
		return appendJSONFloat(dst, v.Float(), p.typ.Bits())
	case planNumber:
		n := v.String()
		if n == "" {
			n = "0"
		}
		if !isJSONNumber(n) {
			return dst, fmt.Errorf("invalid number literal %q", n)
		}
		return append(dst, n...), nil
	case planString:
		return appendJSONString(dst, v.String()), nil
	case planBytes:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.Bytes())
		return append(dst, '"'), nil
	case planSlice:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return p.appendElements(dst, v)
	case planArray:
		return p.appendElements(dst, v)
	case planMap:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return p.appendMap(dst, v)
	case planStruct:
		return p.appendStruct(dst, v, nil)
	case planPointer:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return p.elem.appendJSON(dst, v.Elem())
	case planAny:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return appendMarshaled(dst, v.Interface())
	}
	return dst, errors.New(p.problem)
}

func appendMarshaled(dst []byte, v any) ([]byte, error) {
	b, err := marshalJSON(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

func (p *typePlan) appendElements(dst []byte, v reflect.Value) ([]byte, error) {
	dst = append(dst, '[')
	for i := range v.Len() {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = p.elem.appendJSON(dst, v.Index(i)); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendMap encodes a map with string keys in key order.
func (p *typePlan) appendMap(dst []byte, v reflect.Value) ([]byte, error) {
	type entry struct {
		key   string
		value reflect.Value
	}
	entries := make([]entry, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		entries = append(entries, entry{it.Key().String(), it.Value()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, e.key)
		dst = append(dst, ':')
		var err error
		if dst, err = p.elem.appendJSON(dst, e.value); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// encodedString locates the encoding of text (appendJSONString's) in a
// buffer being built: buf[start:end].
type encodedString struct {
	text       string
	start, end int
}

// appendJSONReusing is appendJSON, except that where v is a struct (or
// points to one) a string field whose text is known.text is copied from
// known's encoding, dst[known.start:known.end], instead of being escaped
// again: a typed tool's text content is often a field of its structured
// content (Out's String() returns it). known may be nil.
func (p *typePlan) appendJSONReusing(dst []byte, v reflect.Value, known *encodedString) ([]byte, error) {
	for p.kind == planPointer && !p.marshalJSON && !p.marshalText && !v.IsNil() {
		p, v = p.elem, v.Elem()
	}
	if p.kind != planStruct || p.marshalJSON || p.marshalText {
		return p.appendJSON(dst, v)
	}
	return p.appendStruct(dst, v, known)
}

// appendStruct encodes the struct v; known, when set, is as for
// appendJSONReusing.
func (p *typePlan) appendStruct(dst []byte, v reflect.Value, known *encodedString) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	for i := range p.fields {
		f := &p.fields[i]
		fv, ok := fieldValue(v, f)
		if !ok || f.omitEmpty && isEmptyJSONValue(fv) || f.omitZero && isZeroValue(fv) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, f.quotedName...)
		if known != nil && f.encodesAsString() && fv.String() == known.text {
			dst = append(dst, dst[known.start:known.end]...)
			continue
		}
		var err error
		if dst, err = f.appendValue(dst, fv); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendValue encodes the value fv of field f, with its string option.
func (f *fieldPlan) appendValue(dst []byte, fv reflect.Value) ([]byte, error) {
	p := f.plan
	if !f.quoted {
		return p.appendJSON(dst, fv)
	}
	if p.kind == planPointer {
		if fv.IsNil() {
			return append(dst, "null"...), nil
		}
		p, fv = p.elem, fv.Elem()
	}
	inner, err := p.appendJSON(nil, fv)
	if err != nil {
		return dst, err
	}
	if p.kind == planString {
		return appendJSONString(dst, string(inner)), nil
	}
	dst = append(dst, '"')
	dst = append(dst, inner...)
	return append(dst, '"'), nil
}

// encodesAsString reports whether f's value is encoded as appendJSONString
// encodes its text: a string without the string option or a marshaler.
func (f *fieldPlan) encodesAsString() bool {
	return f.plan.kind == planString && !f.quoted && !f.plan.marshalJSON && !f.plan.marshalText
}

// fieldValue returns field f of struct v; ok is false when an embedded
// pointer on its way is nil (the field is then omitted).
func fieldValue(v reflect.Value, f *fieldPlan) (reflect.Value, bool) {
	for _, i := range f.index[:len(f.index)-1] {
		v = v.Field(i)
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
	}
	return v.Field(f.index[len(f.index)-1]), true
}

// isEmptyJSONValue reports whether omitempty omits v.
func isEmptyJSONValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isZeroValue reports whether omitzero omits v: its IsZero method says so,
// or, without one, it is its type's zero value.
func isZeroValue(v reflect.Value) bool {
	type zeroer interface{ IsZero() bool }
	if v.Type().Implements(reflect.TypeFor[zeroer]()) {
		if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
			return true
		}
		return v.Interface().(zeroer).IsZero()
	}
	if v.CanAddr() && v.Addr().Type().Implements(reflect.TypeFor[zeroer]()) {
		return v.Addr().Interface().(zeroer).IsZero()
	}
	return v.IsZero()
}

// appendJSONFloat encodes f as encoding/json does: the shortest decimal that
// round-trips at the float's size, in exponent form below 1e-6 and from
// 1e21 on, with a one-digit negative exponent unpadded (1e-7, not 1e-07).
func appendJSONFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("unsupported float value %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// isJSONNumber reports whether s is a JSON number literal.
func isJSONNumber(s string) bool {
	end, err := scanNumber([]byte(s), 0)
	return err == nil && end == len(s)
}

// sizeHint estimates, generously for text with few escapes of ASCII
// characters (non-ASCII ones are counted), the length of v's encoding, to
// size the buffer it is encoded into.
func (p *typePlan) sizeHint(v reflect.Value) int {
	const slack = 16 // for a few escapes
	if p.marshalJSON || p.marshalText {
		return 64
	}
	switch p.kind {
	case planBool, planInt, planUint, planFloat, planNumber:
		return 24
	case planString:
		return v.Len() + 2 + slack + escapeGrowth(v.String())
	case planBytes:
		return base64.StdEncoding.EncodedLen(v.Len()) + 2
	case planSlice, planArray:
		n := 2
		for i := range v.Len() {
			n += 1 + p.elem.sizeHint(v.Index(i))
		}
		return n
	case planMap:
		n := 2
		for it := v.MapRange(); it.Next(); {
			n += it.Key().Len() + 4 + slack + p.elem.sizeHint(it.Value())
		}
		return n
	case planStruct:
		n := 2
		for i := range p.fields {
			f := &p.fields[i]
			if fv, ok := fieldValue(v, f); ok {
				n += len(f.quotedName) + 1 + f.plan.sizeHint(fv)
			}
		}
		return n
	case planPointer:
		if v.IsNil() {
			return 4
		}
		return p.elem.sizeHint(v.Elem())
	}
	return 64
}
