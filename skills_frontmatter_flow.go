package main

// The frontmatter parser's quoted strings and one-line flow collections
// (skills_frontmatter.go has the rest and says what is accepted).

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseQuoted parses the quoted string s starts with and returns it with
// the number of bytes it took.
func parseQuoted(s string) (string, int, error) {
	quote := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == quote && quote == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case c == quote:
			return b.String(), i + 1, nil
		case c == '\\' && quote == '"':
			if i+1 == len(s) {
				return "", 0, errors.New("a double-quoted string may not span lines")
			}
			n, err := unescapeYAML(&b, s[i+1:])
			if err != nil {
				return "", 0, err
			}
			i += n
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("a quoted string must close on its line")
}

// unescapeYAML writes the character an escape stands for (s follows the
// backslash) and returns the bytes of s it took.
func unescapeYAML(b *strings.Builder, s string) (int, error) {
	simple := map[byte]string{'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v", 'f': "\f",
		'r': "\r", 'e': "\x1b", ' ': " ", '"': "\"", '/': "/", '\\': "\\", 'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029"}
	if r, ok := simple[s[0]]; ok {
		b.WriteString(r)
		return 1, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if width == 0 || len(s) < 1+width {
		return 0, fmt.Errorf("unknown escape \\%c", s[0])
	}
	n, err := strconv.ParseUint(s[1:1+width], 16, 32)
	if err != nil || !utf8.ValidRune(rune(n)) {
		return 0, fmt.Errorf("bad escape \\%s", s[:1+width])
	}
	b.WriteRune(rune(n))
	return 1 + width, nil
}

// flowParser parses a flow collection on one line.
type flowParser struct {
	s string
	i int
}

func (f *flowParser) skipSpace() {
	for f.i < len(f.s) && (f.s[f.i] == ' ' || f.s[f.i] == '\t') {
		f.i++
	}
	if f.i < len(f.s) && f.s[f.i] == '#' && f.i > 0 && (f.s[f.i-1] == ' ' || f.s[f.i-1] == '\t') {
		f.i = len(f.s)
	}
}

func (f *flowParser) value(depth int) (any, error) {
	if depth > maxFrontmatterDepth {
		return nil, fmt.Errorf("nesting deeper than %d", maxFrontmatterDepth)
	}
	f.skipSpace()
	if f.i == len(f.s) {
		return nil, errors.New("a flow collection must close on its line")
	}
	switch f.s[f.i] {
	case '[':
		f.i++
		items := []any{}
		for {
			f.skipSpace()
			if f.i < len(f.s) && f.s[f.i] == ']' {
				f.i++
				return items, nil
			}
			v, err := f.value(depth + 1)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
			if err := f.separator(']'); err != nil {
				return nil, err
			}
		}
	case '{':
		f.i++
		m := &yamlMap{}
		for {
			f.skipSpace()
			if f.i < len(f.s) && f.s[f.i] == '}' {
				f.i++
				return m, nil
			}
			k, err := f.scalar(true)
			if err != nil {
				return nil, err
			}
			key, ok := k.(string)
			if !ok {
				key = fmt.Sprint(k)
				if k == nil {
					key = "null"
				}
			}
			if _, dup := m.get(key); dup {
				return nil, fmt.Errorf("duplicate key %q", key)
			}
			f.skipSpace()
			var v any
			if f.i < len(f.s) && f.s[f.i] == ':' {
				f.i++
				f.skipSpace()
				if f.i < len(f.s) && f.s[f.i] != ',' && f.s[f.i] != '}' {
					if v, err = f.value(depth + 1); err != nil {
						return nil, err
					}
				}
			}
			m.keys, m.values = append(m.keys, key), append(m.values, v)
			if err := f.separator('}'); err != nil {
				return nil, err
			}
		}
	case '&', '*', '!':
		return nil, errors.New("anchors, aliases and tags are not accepted")
	}
	return f.scalar(false)
}

// separator moves past a comma; at the closing bracket it stops before it.
func (f *flowParser) separator(closing byte) error {
	f.skipSpace()
	switch {
	case f.i < len(f.s) && f.s[f.i] == ',':
		f.i++
		return nil
	case f.i < len(f.s) && f.s[f.i] == closing:
		return nil
	}
	return fmt.Errorf("expected ',' or %q in a flow collection (flow collections must close on their line)", closing)
}

// scalar parses a quoted or plain scalar inside a flow collection; a key
// ends at ':' too.
func (f *flowParser) scalar(key bool) (any, error) {
	if f.i == len(f.s) {
		return nil, errors.New("a flow collection must close on its line")
	}
	if f.s[f.i] == '"' || f.s[f.i] == '\'' {
		s, n, err := parseQuoted(f.s[f.i:])
		if err != nil {
			return nil, err
		}
		f.i += n
		return s, nil
	}
	start := f.i
	for f.i < len(f.s) {
		c := f.s[f.i]
		if c == ',' || c == ']' || c == '}' || c == '[' || c == '{' ||
			c == ':' && (key || f.i+1 == len(f.s) || f.s[f.i+1] == ' ' || f.s[f.i+1] == ',') ||
			c == '#' && f.i > start && f.s[f.i-1] == ' ' {
			break
		}
		f.i++
	}
	text := strings.TrimRight(f.s[start:f.i], " \t")
	if text == "" {
		return nil, fmt.Errorf("unexpected %q in a flow collection", f.s[f.i:min(f.i+1, len(f.s))])
	}
	return typedScalar(text)
}
