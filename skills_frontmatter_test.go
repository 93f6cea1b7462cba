package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// frontmatterCases are YAML texts and the JSON object each parses to. The
// expected values are those a YAML 1.2 parser (core schema) gives.
func frontmatterCases() []struct{ name, yaml, json string } {
	return []struct{ name, yaml, json string }{
		{"scalars", "name: pdf\ndescription: Extract text\nlicense: MIT", `{"name":"pdf","description":"Extract text","license":"MIT"}`},
		{"typed scalars", "a: 1\nb: -2.5\nc: true\nd: False\ne: null\nf: ~\ng:\nh: 0x1F\ni: 0o17\nj: 1e3\nk: .5\nl: +7\nm: 007\nn: 12345678901234567890123",
			`{"a":1,"b":-2.5,"c":true,"d":false,"e":null,"f":null,"g":null,"h":31,"i":15,"j":1000,"k":0.5,"l":7,"m":7,"n":1.2345678901234568e+22}`},
		{"strings that look typed", "a: \"1\"\nb: 'true'\nc: 1.2.3\nd: yes\ne: 0x\ng: 1_000", `{"a":"1","b":"true","c":"1.2.3","d":"yes","e":"0x","g":"1_000"}`},
		{"quoted", `a: "tab\there \"q\" \u00e9 \x41 \\ \/"` + "\nb: 'it''s # not a comment'\nc: \"\"\n\"quoted key\": 1\n'single key': 2",
			`{"a":"tab\there \"q\" é A \\ /","b":"it's # not a comment","c":"","quoted key":1,"single key":2}`},
		{"comments", "# leading\nname: x # trailing\n# between\ndescription: a#b c\n  # indented comment\nurl: http://a/b#frag", `{"name":"x","description":"a#b c","url":"http://a/b#frag"}`},
		{"nested maps", "metadata:\n  author: me\n  version: \"1.0\"\n  deep:\n    deeper:\n      x: 1\nafter: 2",
			`{"metadata":{"author":"me","version":"1.0","deep":{"deeper":{"x":1}}},"after":2}`},
		{"lists", "tags:\n  - a\n  - 2\n  - \"c\"\nsame-indent:\n- x\n- y\nempty-item:\n  -\n  - z",
			`{"tags":["a",2,"c"],"same-indent":["x","y"],"empty-item":[null,"z"]}`},
		{"lists of maps", "tools:\n  - name: a\n    args: [x, y]\n  - name: b\n    nested:\n      k: v\nother:\n  - - inner",
			`{"tools":[{"name":"a","args":["x","y"]},{"name":"b","nested":{"k":"v"}}],"other":[["inner"]]}`},
		{"lists of maps at key indent", "tools:\n- name: a\n  n: 1\n- name: b", `{"tools":[{"name":"a","n":1},{"name":"b"}]}`},
		{"nested lists", "m:\n  - - a\n    - b\n  - - c", `{"m":[["a","b"],["c"]]}`},
		{"flow", "a: [1, two, \"three\", [4], {k: v}]\nb: {x: 1, 'y': [a, b], z: }\nc: []\nd: {}",
			`{"a":[1,"two","three",[4],{"k":"v"}],"b":{"x":1,"y":["a","b"],"z":null},"c":[],"d":{}}`},
		{"literal block", "a: |\n  line one\n    indented\n\n  line three\nb: x", `{"a":"line one\n  indented\n\nline three\n","b":"x"}`},
		{"folded block", "a: >\n  folded\n  into one\n\n  para two\n    more indented\n  back\nb: x",
			`{"a":"folded into one\npara two\n  more indented\nback\n","b":"x"}`},
		{"chomping", "strip: |-\n  text\n\nkeep: |+\n  text\n\nclip: >\n  text\n\n", `{"strip":"text","keep":"text\n\n","clip":"text\n"}`},
		{"indentation indicator", "a: |2\n    four spaces\n  two\n", `{"a":"  four spaces\ntwo\n"}`},
		{"multi-line plain", "description: This skill does\n  many things across\n  several lines.\nnext: 1",
			`{"description":"This skill does many things across several lines.","next":1}`},
		{"multi-line plain with a blank line", "d: one\n  two\n\n  three\nn: 1", `{"d":"one two\nthree","n":1}`},
		{"empty", "", `{}`},
		{"only comments", "# nothing\n\n", `{}`},
		{"colons", "time: 12:30\nurl: https://example.com\nk: a:b", `{"time":"12:30","url":"https://example.com","k":"a:b"}`},
		{"crlf", "name: x\r\ndescription: y\r\n", `{"name":"x","description":"y"}`},
		{"unicode", "name: café\ndescription: \"\\U0001F600\"", `{"name":"café","description":"😀"}`},
	}
}

func TestParseFrontmatter(t *testing.T) {
	for _, tt := range frontmatterCases() {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseFrontmatter(tt.yaml)
			if err != nil {
				t.Fatalf("parseFrontmatter: %v", err)
			}
			got, err := marshalJSON(m)
			if err != nil {
				t.Fatal(err)
			}
			var gotV, wantV any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			if err := json.Unmarshal([]byte(tt.json), &wantV); err != nil {
				t.Fatalf("bad expectation %s: %v", tt.json, err)
			}
			gotN, _ := json.Marshal(gotV)
			wantN, _ := json.Marshal(wantV)
			if string(gotN) != string(wantN) {
				t.Fatalf("parsed\n%s\n got: %s\nwant: %s", tt.yaml, gotN, wantN)
			}
		})
	}
}

// TestFrontmatterKeyOrder: the JSON object keeps the order the keys were
// written in.
func TestFrontmatterKeyOrder(t *testing.T) {
	m, err := parseFrontmatter("z: 1\na: 2\nm:\n  y: 3\n  b: 4")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := marshalJSON(m)
	if string(got) != `{"z":1,"a":2,"m":{"y":3,"b":4}}` {
		t.Fatalf("got %s", got)
	}
}

func TestParseFrontmatterRefuses(t *testing.T) {
	for _, tt := range []struct {
		name, yaml, err string
	}{
		{"anchor", "a: &x 1\nb: *x", "anchors, aliases and tags are not accepted"},
		{"tag", "a: !!str 1", "anchors, aliases and tags are not accepted"},
		{"complex key", "? a\n: b", "complex keys"},
		{"document marker", "a: 1\n---\nb: 2", "directives and document markers are not accepted"},
		{"directive", "%YAML 1.2\na: 1", "a key may not start with '%'"},
		{"multi-line flow", "a: [1,\n  2]", "must close on its line"},
		{"multi-line quoted", "a: \"one\n  two\"", "must close on its line"},
		{"tab indentation", "a:\n\tb: 1", "tabs are not accepted in indentation"},
		{"duplicate key", "a: 1\na: 2", `duplicate key "a"`},
		{"duplicate flow key", "a: {x: 1, x: 2}", `duplicate key "x"`},
		{"top-level sequence", "- a\n- b", "must be a mapping"},
		{"top-level scalar", "just text", "expected a 'key: value' entry"},
		{"indented top level", "  a: 1", "must start at column 1"},
		{"bad indentation", "a: 1\n  b: 2", `may not contain ": "`},
		{"dash value", "a: -", "a sequence may not start on its key's line"},
		{"over-indented entry", "a:\n    b: 1\n  c: 2", "unexpected indentation"},
		{"infinity", "a: .inf", "not a number JSON can carry"},
		{"nan", "a: .nan", "not a number JSON can carry"},
		{"huge hex", "a: 0xFFFFFFFFFFFFFFFFFF", "out of range"},
		{"unknown escape", `a: "\q"`, `unknown escape \q`},
		{"bad unicode escape", `a: "\uD800"`, `bad escape \uD800`},
		{"colon in plain", "a: b: c", `may not contain ": "`},
		{"sequence on key line", "a: - b", "a sequence may not start on its key's line"},
		{"text after quoted", `a: "x" y`, "unexpected text after a quoted string"},
		{"text after flow", "a: [x] y", "unexpected"},
		{"bad block header", "a: |x\n  t", "bad block scalar header"},
		{"invalid utf-8", "a: \xff", "not valid UTF-8"},
		{"too deep", "a: " + strings.Repeat("[", maxFrontmatterDepth+1) + strings.Repeat("]", maxFrontmatterDepth+1), "nesting deeper than"},
		{"too long", "a: " + strings.Repeat("x", maxFrontmatterBytes), "exceeds"},
		{"reserved indicator", "a: @x", "may not start with '@'"},
		{"empty key", ": x", "empty keys are not accepted"},
		{"unclosed flow map", "a: {", "must close on its line"},
		{"unclosed flow map after a key", "a: {k: v,", "must close on its line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseFrontmatter(tt.yaml)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				got, _ := marshalJSON(m)
				t.Fatalf("parseFrontmatter(%q) = %s, %v; want an error containing %q", tt.yaml, got, err, tt.err)
			}
		})
	}
}

func TestSplitFrontmatter(t *testing.T) {
	for _, tt := range []struct {
		name, content, text string
		ok                  bool
	}{
		{"plain", "---\na: 1\n---\nbody", "a: 1", true},
		{"crlf", "---\r\na: 1\r\n---\r\nbody", "a: 1", true},
		{"bom", "\ufeff---\na: 1\n---\n", "a: 1", true},
		{"closing at end", "---\na: 1\n---", "a: 1", true},
		{"closing with spaces", "---\na: 1\n---  \nbody", "a: 1", true},
		{"empty", "---\n---\n", "", true},
		{"no opening", "a: 1\n---\n", "", false},
		{"no closing", "---\na: 1\n", "", false},
		{"opening not alone", "--- a\nb: 1\n---\n", "", false},
		{"indented closing", "---\na: 1\n ---\n", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, ok := splitFrontmatter([]byte(tt.content))
			if ok != tt.ok || text != tt.text {
				t.Fatalf("splitFrontmatter(%q) = %q, %v; want %q, %v", tt.content, text, ok, tt.text, tt.ok)
			}
		})
	}
}

// FuzzParseFrontmatter: any text is parsed or refused without a panic, in
// bounded work; what is accepted encodes to a JSON object, and parsing is
// deterministic. The corpus is in testdata/fuzz/FuzzParseFrontmatter.
func FuzzParseFrontmatter(f *testing.F) {
	for _, tt := range frontmatterCases() {
		f.Add(tt.yaml)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m, err := parseFrontmatter(text)
		if err != nil {
			return
		}
		got, err := marshalJSON(m)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", text, err)
		}
		var obj map[string]any
		if err := json.Unmarshal(got, &obj); err != nil {
			t.Fatalf("accepted %q as %s, not a JSON object: %v", text, got, err)
		}
		again, err := parseFrontmatter(text)
		if err != nil {
			t.Fatalf("second parse of %q failed: %v", text, err)
		}
		if b, _ := marshalJSON(again); string(b) != string(got) {
			t.Fatalf("parses of %q differ: %s and %s", text, got, b)
		}
	})
}
