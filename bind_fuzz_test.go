package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// Differential fuzzing of the typed encoder and the argument binder against
// encoding/json. Seeds: f.Add below and testdata/fuzz/<FuzzName>/.

// FuzzTypedEncodeAgainstEncodingJSON decodes the input with encoding/json
// into a value of every kind a typed tool's result may hold, and checks that
// the typed encoder (typePlan.appendJSON) writes exactly what encoding/json
// writes (HTML escaping off), with every non-ASCII character as a \u escape:
// the frames' rule. f64 sets a float field from raw bits, so NaN and the
// infinities (which both refuse) and every rounding case are reached.
func FuzzTypedEncodeAgainstEncodingJSON(f *testing.F) {
	f.Add([]byte(`{"str":"a\u00e9\u2028<&>","i8":-128,"u16":65535,"f32":0.1,"list":["x"],"map":{"b":1,"a":2},"inner":{"city":"Oslo"}}`), uint64(0x3ff0000000000001))
	f.Add([]byte(`{"any":{"k":[1.5,"v",null,true]},"raw":[1, 2],"bytes":"aGk=","number":-1.25e3,"when":"2024-05-06T07:08:09.123Z"}`), math.Float64bits(1e21))
	f.Add([]byte(`{"quoted":"42","quotedB":"true","quotedS":"\"q\"","ptrStr":"\ud83d\ude00","intMap":{"-3":"a"}}`), math.Float64bits(math.NaN()))
	f.Fuzz(func(t *testing.T, in []byte, f64 uint64) {
		var v bindAll
		if json.Unmarshal(in, &v) != nil {
			return
		}
		v.F64 = math.Float64frombits(f64)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		wantErr := enc.Encode(&v)
		rv := reflect.ValueOf(&v)
		got, err := newPlanBuilder(nil).plan(rv.Type()).appendJSON(nil, rv)
		switch {
		case (err != nil) != (wantErr != nil):
			t.Fatalf("appendJSON error %v, encoding/json error %v, for %+v", err, wantErr, v)
		case err != nil:
			return
		}
		if ascii := asciiJSON(bytes.TrimSuffix(want.Bytes(), []byte("\n"))); !bytes.Equal(got, ascii) {
			t.Fatalf("appendJSON wrote\n%s\nencoding/json, with \\u escapes,\n%s", got, ascii)
		}
	})
}

// asciiJSON replaces every non-ASCII character of the JSON text b by its \u
// escape (a surrogate pair above U+FFFF), as encoding/json writes U+2028:
// lowercase hex. (encoding/json has already replaced invalid UTF-8 with
// \ufffd escapes.)
func asciiJSON(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		if r < utf8.RuneSelf {
			out = append(out, byte(r))
			continue
		}
		units := []uint16{uint16(r)}
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			units = []uint16{uint16(r1), uint16(r2)}
		}
		for _, u := range units {
			out = fmt.Appendf(out, `\u%04x`, u)
		}
	}
	return out
}

// FuzzBindAgainstEncodingJSON binds a JSON object to a struct of every kind
// of field with the binder (lenient, as HandlerRequest.Bind; validated or
// not) and with encoding/json, and checks that they agree, but for the
// differences the binder documents (bind.go):
//
//  1. keys match a field's name exactly, case included: an input with a key
//     that matches a name only case-insensitively is not compared;
//  2. a number with an integral value (250.0, 2.5e2) binds to an integer
//     field, which encoding/json refuses: such an input is compared with
//     encoding/json's binding of it with those numbers written as integers;
//  3. a field with the string option takes a string holding a JSON value of
//     its type, where encoding/json also takes what strconv parses ("00",
//     "1.", "0x1p4"): Bind may refuse such a field that encoding/json binds;
//  4. the binder stops at the first mismatch, encoding/json goes on: a
//     value is compared only when neither fails, and either fails when the
//     other does.
//
// The strict binder (a typed tool's) binds exactly what the lenient one
// binds, or refuses: only where the input holds a null (which it refuses
// where the inferred schema does) or a []byte written as an array of
// numbers (it takes base64 only).
func FuzzBindAgainstEncodingJSON(f *testing.F) {
	f.Add([]byte(`{"str":"a","i8":1,"f64":2.5,"list":["b"],"inner":{"city":"c","zip":3},"map":{"k":1}}`))
	f.Add([]byte(`{"i64":2.5e2,"u16":250.0,"arr":[1.0,2,3e0],"intMap":{"7":"x"},"quoted":"3"}`))
	f.Add([]byte(`{"STR":"x","Inner":{"CITY":"y"},"str":null,"bytes":[104,105],"innerPtr":null,"any":{"a":[1]}}`))
	f.Add([]byte(`{"when":"2024-05-06T07:08:09Z","addr":"::1","number":1e3,"raw":{"a":1},"nested":[[1],[2,3]]}`))
	names := bindFieldNames(reflect.TypeFor[bindAll](), map[reflect.Type]bool{})
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) || !utf8.Valid(in) || len(bytes.TrimSpace(in)) == 0 || bytes.TrimSpace(in)[0] != '{' {
			return
		}
		in = bytes.TrimSpace(in)
		var lenient bindAll
		err := argumentsRequest(string(in), false, nil).Bind(&lenient)
		if _, strictJSON := decodeEnvelope(in); strictJSON == nil {
			var validated bindAll
			verr := argumentsRequest(string(in), true, nil).Bind(&validated)
			if (verr == nil) != (err == nil) || err == nil && !reflect.DeepEqual(validated, lenient) {
				t.Fatalf("validated Bind (%v) differs from Bind (%v):\n%+v\n%+v", verr, err, validated, lenient)
			}
		}
		var strict bindAll
		serr := binder{strict: true}.bind(in, reflect.ValueOf(&strict).Elem(), newPlanBuilder(nil).plan(reflect.TypeFor[bindAll]()))
		switch {
		case serr == nil && err != nil:
			t.Fatalf("the strict binder binds what Bind refuses (%v)", err)
		case serr == nil && !reflect.DeepEqual(strict, lenient):
			t.Fatalf("strict binding differs:\n%+v\n%+v", strict, lenient)
		case serr != nil && err == nil && !bytes.Contains(in, []byte("null")) && !bytes.Contains(in, []byte("[")):
			t.Fatalf("the strict binder refuses (%v) what Bind binds, with no null and no array", serr)
		}
		if keyFoldsToField(in, names) {
			return // difference 1
		}
		var want bindAll
		wantErr := json.Unmarshal(in, &want)
		if wantErr != nil && err == nil {
			integral, ok := integralNumbersAsIntegers(in)
			if !ok {
				t.Fatalf("Bind binds what encoding/json refuses (%v), and not for an integral number: %s", wantErr, in)
			}
			want = bindAll{}
			if wantErr = json.Unmarshal(integral, &want); wantErr != nil {
				t.Fatalf("Bind binds what encoding/json refuses (%v), also with integral numbers as integers: %s", wantErr, integral)
			}
			// The fields that keep a number's text keep the input's.
			var asSent bindAll
			json.Unmarshal(in, &asSent)
			want.Raw, want.Number = asSent.Raw, asSent.Number
		}
		if wantErr == nil && err != nil && stringOptionRefused(err) {
			return // difference 3
		}
		switch {
		case (wantErr != nil) != (err != nil):
			t.Fatalf("Bind error %v, encoding/json error %v, for %s", err, wantErr, in)
		case err == nil && !reflect.DeepEqual(lenient, want):
			t.Fatalf("Bind %s:\n got %+v\nwant %+v", in, lenient, want)
		}
	})
}

// stringOptionRefused reports whether err is Bind's refusal of the text of a
// field with the string option (quoted, quotedB, quotedS of bindAll) that
// is not a JSON value of the field's type.
func stringOptionRefused(err error) bool {
	var ae *ArgumentError
	return errors.As(err, &ae) && strings.HasPrefix(ae.Problem, "must be a string holding") &&
		(ae.Path == "quoted" || ae.Path == "quotedB" || ae.Path == "quotedS")
}

// bindFieldNames returns the JSON names of t's fields and of the structs it
// holds, at any depth: a field's tag name, else its Go name.
func bindFieldNames(t reflect.Type, seen map[reflect.Type]bool) map[string]bool {
	names := map[string]bool{}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return names
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names[name] = true
		} else {
			names[f.Name] = true
		}
		for n := range bindFieldNames(f.Type, seen) {
			names[n] = true
		}
	}
	return names
}

// keyFoldsToField reports whether an object key of the JSON text in, at any
// depth, equals one of names case-insensitively (as encoding/json folds
// them) but none exactly.
func keyFoldsToField(in []byte, names map[string]bool) bool {
	const (
		inArray = iota
		wantKey
		wantValue
	)
	var stack []int
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1] == wantValue {
			stack[n-1] = wantKey
		}
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		n := len(stack)
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, wantKey)
			case '[':
				stack = append(stack, inArray)
			default:
				stack = stack[:n-1]
				valueDone()
			}
			continue
		}
		if n > 0 && stack[n-1] == wantKey {
			key := tok.(string)
			if !names[key] {
				for name := range names {
					if strings.EqualFold(key, name) {
						return true
					}
				}
			}
			stack[n-1] = wantValue
			continue
		}
		valueDone()
	}
}

// integralNumbersAsIntegers returns in with every number that has a
// fraction or an exponent but an integral value in the int64 range written
// as an integer, and so the text of the top-level "quoted" (an int with the
// string option); ok is false when there is none.
func integralNumbersAsIntegers(in []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var out bytes.Buffer
	changed := false
	var stack []byte // '{' expecting a key, ':' expecting a value, '['
	key := ""        // the last key read at the top level
	sep := func() {
		if n := len(stack); n > 0 {
			switch stack[n-1] {
			case '[', '{':
				if out.Len() > 0 && out.Bytes()[out.Len()-1] != '[' && out.Bytes()[out.Len()-1] != '{' {
					out.WriteByte(',')
				}
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out.Bytes(), changed
		}
		if err != nil {
			return nil, false
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				sep()
				out.WriteByte(byte(v))
				if n := len(stack); n > 0 && stack[n-1] == ':' {
					stack[n-1] = '{'
				}
				stack = append(stack, byte(v))
				continue
			}
			out.WriteByte(byte(v))
			stack = stack[:len(stack)-1]
			continue
		case string:
			if n := len(stack); n > 0 && stack[n-1] == '{' {
				if n == 1 {
					key = v
				}
				sep()
				b, _ := json.Marshal(v)
				out.Write(b)
				out.WriteByte(':')
				stack[n-1] = ':'
				continue
			}
			sep()
			if len(stack) == 1 && key == "quoted" {
				if i, ok := integral(v); ok {
					v, changed = i, true
				}
			}
			b, _ := json.Marshal(v)
			out.Write(b)
		case json.Number:
			sep()
			s := string(v)
			if i, ok := integral(s); ok {
				s, changed = i, true
			}
			out.WriteString(s)
		default:
			sep()
			b, _ := json.Marshal(v)
			out.Write(b)
		}
		if n := len(stack); n > 0 && stack[n-1] == ':' {
			stack[n-1] = '{'
		}
	}
}

// integral returns the number n, which has a fraction or an exponent, as
// an integer when its value is one in the int64 range.
func integral(n string) (string, bool) {
	if !strings.ContainsAny(n, ".eE") || !isJSONNumber(n) {
		return "", false
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return "", false
	}
	return strconv.FormatFloat(f, 'f', 0, 64), true
}
