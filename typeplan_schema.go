package main

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// inferSchema returns the JSON Schema (2020-12) of the values of p, the
// plan of a typed tool's input (input true) or output type; the root, past
// any pointers, is the object itself (never null). It fails for a type
// with no JSON form and for a recursive type.
//
// Struct fields are properties by their json names, in field order, with
// their `jsonschema` tag as description; a field is required unless tagged
// omitempty or omitzero (beyond 64 such fields, the rest are optional).
// bool is "boolean", integers "integer" (unsigned ones minimum 0, the 8- to
// 32-bit ones their range), floats and json.Number "number", strings
// "string", []byte a base64 string, slices and arrays "array" with items,
// maps "object" with additionalProperties; pointers, slices and maps also
// allow null (encoding/json writes nil ones as null). time.Time is a
// "date-time" string, a type that decodes (for the input) or encodes (for the
// output) itself as text a string, one that does so as JSON, and interfaces,
// allow any value. A field with the string option is a string.
func inferSchema(p *typePlan, input bool) (json.RawMessage, error) {
	w := schemaWriter{input: input, root: true, visiting: map[*typePlan]bool{}}
	dst, err := w.schema(nil, derefPlan(p), "", false)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(dst), nil
}

type schemaWriter struct {
	input    bool
	root     bool               // the next schema is the root's
	visiting map[*typePlan]bool // the types being described, to refuse recursion
}

// schema appends the schema of p with description desc; nullable (p is
// pointed to) adds null to the allowed types.
func (w *schemaWriter) schema(dst []byte, p *typePlan, desc string, nullable bool) ([]byte, error) {
	root := w.root
	w.root = false
	if w.visiting[p] {
		return dst, fmt.Errorf("type %v is recursive", p.typ)
	}
	w.visiting[p] = true
	defer delete(w.visiting, p)
	if p.kind == planPointer {
		return w.schema(dst, p.elem, desc, true)
	}
	// encoding/json writes nil slices and maps as null; the root is never nil.
	nilAsNull := nullable || !root
	custom := w.input && (p.unmarshalJSON || p.unmarshalText) || !w.input && (p.marshalJSON || p.marshalText)
	text := w.input && p.unmarshalText || !w.input && p.marshalText
	switch {
	case p.isTime:
		return schemaHead(dst, "string", nullable, `"format":"date-time"`, desc), nil
	case custom && text:
		return schemaHead(dst, "string", nullable, "", desc), nil
	case custom, p.kind == planAny:
		return schemaHead(dst, "", false, "", desc), nil
	}
	switch p.kind {
	case planBool:
		return schemaHead(dst, "boolean", nullable, "", desc), nil
	case planInt, planUint:
		var bounds string
		if bits := p.typ.Bits(); bits < 64 {
			lo, hi := integerRange(p)
			bounds = `"minimum":` + lo + `,"maximum":` + hi
		} else if p.kind == planUint {
			bounds = `"minimum":0`
		}
		return schemaHead(dst, "integer", nullable, bounds, desc), nil
	case planFloat, planNumber:
		return schemaHead(dst, "number", nullable, "", desc), nil
	case planString:
		return schemaHead(dst, "string", nullable, "", desc), nil
	case planBytes:
		return schemaHead(dst, "string", nilAsNull, `"contentEncoding":"base64"`, desc), nil
	case planSlice, planArray:
		dst = schemaOpen(dst, "array", nullable || p.kind == planSlice && nilAsNull, "", desc)
		dst = append(dst, `,"items":`...)
		dst, err := w.schema(dst, p.elem, "", false)
		return append(dst, '}'), err
	case planMap:
		if p.mapKey != planString {
			return dst, fmt.Errorf("map type %v: JSON Schema describes only string keys", p.typ)
		}
		dst = schemaOpen(dst, "object", nilAsNull, "", desc)
		dst = append(dst, `,"additionalProperties":`...)
		dst, err := w.schema(dst, p.elem, "", false)
		return append(dst, '}'), err
	case planStruct:
		return w.object(dst, p, desc, nullable)
	}
	return dst, fmt.Errorf("type %v: %s", p.typ, p.problem)
}

// object appends the schema of a struct.
func (w *schemaWriter) object(dst []byte, p *typePlan, desc string, nullable bool) ([]byte, error) {
	dst = schemaOpen(dst, "object", nullable, "", desc)
	dst = append(dst, `,"properties":{`...)
	var required []byte
	for i := range p.fields {
		f := &p.fields[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, f.quotedName...)
		var err error
		if f.quoted {
			// The string option: the value is a string holding the JSON text.
			dst = schemaHead(dst, "string", f.plan.kind == planPointer, "", f.description)
			_, err = w.schema(nil, f.plan, "", false) // still refuse types with no JSON form
		} else {
			dst, err = w.schema(dst, f.plan, f.description, false)
		}
		if err != nil {
			return dst, err
		}
		if f.requiredBit >= 0 {
			if required != nil {
				required = append(required, ',')
			}
			required = appendJSONString(required, f.name)
		}
	}
	dst = append(dst, '}')
	if required != nil {
		dst = append(dst, `,"required":[`...)
		dst = append(dst, required...)
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// schemaOpen appends the start of a schema object: its type (with null when
// nullable; none when typ is empty), then extra members, then the
// description, without the closing brace.
func schemaOpen(dst []byte, typ string, nullable bool, extra, desc string) []byte {
	dst = append(dst, '{')
	sep := func() {
		if len(dst) > 0 && dst[len(dst)-1] != '{' {
			dst = append(dst, ',')
		}
	}
	if typ != "" {
		dst = append(dst, `"type":`...)
		if nullable {
			dst = append(dst, `["`+typ+`","null"]`...)
		} else {
			dst = strconv.AppendQuote(dst, typ)
		}
	}
	if extra != "" {
		sep()
		dst = append(dst, extra...)
	}
	if desc != "" {
		sep()
		dst = append(dst, `"description":`...)
		dst = appendJSONString(dst, desc)
	}
	return dst
}

// schemaHead appends a complete schema of scalar type typ.
func schemaHead(dst []byte, typ string, nullable bool, extra, desc string) []byte {
	return append(schemaOpen(dst, typ, nullable, extra, desc), '}')
}
