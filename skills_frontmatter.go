package main

// The YAML frontmatter of a SKILL.md, parsed into a JSON object (the
// skills extension's Skill.frontmatter). The parser takes the YAML that
// skills use in practice and refuses, with an error, what it does not take;
// it never guesses. It accepts:
//
//   - block mappings and block sequences nested by indentation (spaces),
//     sequences of mappings ("- name: x" with the next keys under "name"),
//     and a sequence at its key's own indentation ("key:\n- a");
//   - plain scalars typed as YAML 1.2's core schema does (null ~ and empty,
//     true/false, decimal, 0x and 0o integers, floats), continued on more
//     indented lines (folded into one line);
//   - 'single-quoted' and "double-quoted" strings on one line, with the
//     double-quoted escapes \0 \a \b \t \n \v \f \r \e \" \/ \\ \N \_ \L \P
//     \xXX \uXXXX \UXXXXXXXX and an escaped space;
//   - flow sequences and mappings ([a, b], {k: v}) that close on their line;
//   - block scalars | and > with the chomping indicators - and +, and an
//     explicit indentation digit;
//   - comments (# at the start of a line or after a space).
//
// It refuses: anchors and aliases (&a, *a), tags (!x), directives and more
// than one document, complex keys ("? "), flow collections or quoted
// strings that span lines, tabs in indentation, duplicate keys, numbers
// JSON cannot carry (.inf, .nan), nesting deeper than maxFrontmatterDepth
// and frontmatter longer than maxFrontmatterBytes. A refused frontmatter
// leaves its skill out (skills_catalog.go); it never affects another.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// maxFrontmatterBytes bounds the frontmatter block of a SKILL.md.
	maxFrontmatterBytes = 64 << 10
	// maxFrontmatterDepth bounds the nesting of its collections.
	maxFrontmatterDepth = 32
)

// yamlMap is a mapping in the order its keys were written, so that the JSON
// object keeps the author's order.
type yamlMap struct {
	keys   []string
	values []any // string, bool, nil, json.Number, []any, *yamlMap
}

func (m *yamlMap) get(key string) (any, bool) {
	for i, k := range m.keys {
		if k == key {
			return m.values[i], true
		}
	}
	return nil, false
}

// MarshalJSON encodes the mapping as a JSON object in key order.
func (m *yamlMap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := marshalJSON(k)
		if err != nil {
			return nil, err
		}
		value, err := marshalJSON(m.values[i])
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// splitFrontmatter returns the frontmatter text of a SKILL.md: the lines
// between a first line "---" (after an optional UTF-8 byte order mark) and
// the next line "---" (trailing spaces allowed). ok is false when there is
// no such block within maxFrontmatterBytes.
func splitFrontmatter(content []byte) (text string, ok bool) {
	content = bytes.TrimPrefix(content, []byte("\ufeff"))
	first, rest, found := bytes.Cut(content, []byte("\n"))
	if !found || string(bytes.TrimSuffix(first, []byte("\r"))) != "---" {
		return "", false
	}
	offset := 0
	for offset <= len(rest) && offset <= maxFrontmatterBytes {
		line, _, _ := bytes.Cut(rest[offset:], []byte("\n"))
		if string(bytes.TrimRight(line, " \t\r")) == "---" && strings.TrimRight(string(line), " \t") != "" {
			body := rest[:offset]
			body = bytes.TrimSuffix(bytes.TrimSuffix(body, []byte("\n")), []byte("\r"))
			return string(body), true
		}
		next := bytes.IndexByte(rest[offset:], '\n')
		if next < 0 {
			break
		}
		offset += next + 1
	}
	return "", false
}

// parseFrontmatter parses frontmatter text into a mapping. The top level
// must be a mapping (an empty text is an empty mapping).
func parseFrontmatter(text string) (*yamlMap, error) {
	if len(text) > maxFrontmatterBytes {
		return nil, fmt.Errorf("frontmatter exceeds %d bytes", maxFrontmatterBytes)
	}
	if !utf8.ValidString(text) {
		return nil, errors.New("frontmatter is not valid UTF-8")
	}
	p := &yamlParser{}
	for i, raw := range strings.Split(text, "\n") {
		raw = strings.TrimSuffix(raw, "\r")
		indent := len(raw) - len(strings.TrimLeft(raw, " "))
		p.lines = append(p.lines, yamlLine{num: i + 1, raw: raw, indent: indent, text: raw[indent:]})
	}
	if !p.skipBlank() {
		return &yamlMap{}, nil
	}
	line := p.lines[p.pos]
	if line.indent != 0 {
		return nil, p.errorf(line, "the top level must start at column 1")
	}
	if isSequenceItem(line.text) {
		return nil, p.errorf(line, "the frontmatter must be a mapping, not a sequence")
	}
	m, err := p.mapping(0, 1)
	if err != nil {
		return nil, err
	}
	if p.skipBlank() {
		return nil, p.errorf(p.lines[p.pos], "unexpected indentation")
	}
	return m, nil
}

type yamlLine struct {
	num    int    // 1-based line number within the frontmatter
	raw    string // the whole line, without its line break
	indent int    // leading spaces
	text   string // raw without its leading spaces
}

type yamlParser struct {
	lines []yamlLine
	pos   int
}

func (p *yamlParser) errorf(l yamlLine, format string, a ...any) error {
	return fmt.Errorf("frontmatter line %d: %s", l.num, fmt.Sprintf(format, a...))
}

// skipBlank moves past blank and comment-only lines; false at the end.
func (p *yamlParser) skipBlank() bool {
	for ; p.pos < len(p.lines); p.pos++ {
		t := p.lines[p.pos].text
		if t != "" && t[0] != '#' && strings.TrimLeft(t, " \t") != "" {
			return true
		}
	}
	return false
}

func isSequenceItem(text string) bool {
	return text == "-" || strings.HasPrefix(text, "- ")
}

// mapping parses the entries of a block mapping at exactly indent.
func (p *yamlParser) mapping(indent, depth int) (*yamlMap, error) {
	if depth > maxFrontmatterDepth {
		return nil, p.errorf(p.lines[p.pos], "nesting deeper than %d", maxFrontmatterDepth)
	}
	m := &yamlMap{}
	for p.skipBlank() {
		line := p.lines[p.pos]
		if line.indent < indent {
			break
		}
		if line.indent > indent {
			return nil, p.errorf(line, "unexpected indentation")
		}
		if isSequenceItem(line.text) {
			break // a sequence at its key's indentation ends the mapping
		}
		if strings.HasPrefix(line.raw[:indent], "\t") || strings.HasPrefix(line.text, "\t") {
			return nil, p.errorf(line, "tabs are not accepted in indentation")
		}
		key, rest, err := p.key(line)
		if err != nil {
			return nil, err
		}
		if _, dup := m.get(key); dup {
			return nil, p.errorf(line, "duplicate key %q", key)
		}
		p.pos++
		value, err := p.value(line, rest, indent, depth, true)
		if err != nil {
			return nil, err
		}
		m.keys = append(m.keys, key)
		m.values = append(m.values, value)
	}
	return m, nil
}

// key splits a mapping entry's line into its key and what follows the colon.
func (p *yamlParser) key(line yamlLine) (key, rest string, err error) {
	t := line.text
	switch t[0] {
	case '"', '\'':
		s, n, err := parseQuoted(t)
		if err != nil {
			return "", "", p.errorf(line, "%v", err)
		}
		after := t[n:]
		if after != ":" && !strings.HasPrefix(after, ": ") && !strings.HasPrefix(after, ":\t") {
			return "", "", p.errorf(line, "a quoted key must be followed by ':'")
		}
		return s, after[1:], nil
	case '?':
		return "", "", p.errorf(line, "complex keys (? ) are not accepted")
	case '&', '*', '!', '[', '{', '|', '>', '%', '@', '`':
		return "", "", p.errorf(line, "a key may not start with %q", t[0])
	}
	colon := -1
	for i := 0; i < len(t); i++ {
		if t[i] == ':' && (i+1 == len(t) || t[i+1] == ' ' || t[i+1] == '\t') {
			colon = i
			break
		}
		if t[i] == '#' && i > 0 && t[i-1] == ' ' {
			break
		}
	}
	if colon < 0 {
		if line.text == "---" || line.text == "..." || strings.HasPrefix(line.text, "%") {
			return "", "", p.errorf(line, "directives and document markers are not accepted")
		}
		return "", "", p.errorf(line, "expected a 'key: value' entry")
	}
	key = strings.TrimRight(t[:colon], " \t")
	if key == "" {
		return "", "", p.errorf(line, "empty keys are not accepted")
	}
	return key, t[colon+1:], nil
}

// value parses the value that follows a key's colon or a sequence item's
// dash: rest is the rest of that line, parentIndent the indentation of the
// key or dash. The value may continue on the following lines.
func (p *yamlParser) value(line yamlLine, rest string, parentIndent, depth int, inMapping bool) (any, error) {
	rest = strings.TrimLeft(rest, " \t")
	if stripComment(rest) == "" {
		if !p.skipBlank() {
			return nil, nil
		}
		next := p.lines[p.pos]
		switch {
		case next.indent > parentIndent && isSequenceItem(next.text):
			return p.sequence(next.indent, depth+1)
		case next.indent > parentIndent:
			return p.mapping(next.indent, depth+1)
		case next.indent == parentIndent && inMapping && isSequenceItem(next.text):
			return p.sequence(next.indent, depth+1)
		}
		return nil, nil
	}
	switch rest[0] {
	case '&', '*', '!':
		return nil, p.errorf(line, "anchors, aliases and tags are not accepted")
	case '|', '>':
		return p.blockScalar(line, rest, parentIndent)
	case '[', '{':
		f := flowParser{s: rest}
		v, err := f.value(depth + 1)
		if err == nil {
			f.skipSpace()
			if f.i < len(f.s) {
				err = fmt.Errorf("unexpected %q after a flow collection (flow collections must close on their line)", f.s[f.i:])
			}
		}
		if err != nil {
			return nil, p.errorf(line, "%v", err)
		}
		return v, nil
	case '"', '\'':
		s, n, err := parseQuoted(rest)
		if err != nil {
			return nil, p.errorf(line, "%v", err)
		}
		if after := strings.TrimSpace(rest[n:]); after != "" && after[0] != '#' {
			return nil, p.errorf(line, "unexpected text after a quoted string")
		}
		return s, nil
	}
	if inMapping && isSequenceItem(rest) {
		return nil, p.errorf(line, "a sequence may not start on its key's line")
	}
	// A plain scalar, possibly continued on more indented lines.
	text := stripComment(rest)
	if err := checkPlain(text); err != nil {
		return nil, p.errorf(line, "%v", err)
	}
	continued := false
	for p.pos < len(p.lines) {
		next := p.lines[p.pos]
		t := strings.TrimLeft(next.text, " \t")
		if t == "" {
			// A blank line inside a plain scalar is a line break, when the
			// scalar goes on after it.
			j := p.pos
			for j < len(p.lines) && strings.TrimLeft(p.lines[j].text, " \t") == "" {
				j++
			}
			if j == len(p.lines) || p.lines[j].indent <= parentIndent || p.lines[j].text[0] == '#' {
				break
			}
			text += strings.Repeat("\n", j-p.pos)
			p.pos = j
			continued = true
			continue
		}
		if next.indent <= parentIndent || t[0] == '#' {
			break
		}
		t = stripComment(t)
		if err := checkPlain(t); err != nil {
			return nil, p.errorf(next, "%v", err)
		}
		if strings.Contains(t, ": ") || strings.HasSuffix(t, ":") {
			return nil, p.errorf(next, "a mapping entry may not continue a plain scalar")
		}
		if strings.HasSuffix(text, "\n") {
			text += t
		} else {
			text += " " + t
		}
		p.pos++
		continued = true
	}
	if continued {
		return text, nil
	}
	return typedScalar(text)
}

// checkPlain refuses what a plain scalar may not contain.
func checkPlain(s string) error {
	if strings.Contains(s, ": ") || strings.HasSuffix(s, ":") {
		return errors.New(`a plain scalar may not contain ": " (quote it)`)
	}
	switch s[0] {
	case '@', '`', '%':
		return fmt.Errorf("a plain scalar may not start with %q (quote it)", s[0])
	}
	return nil
}

// stripComment removes a comment (a # after a space) and trailing spaces
// from a plain line.
func stripComment(s string) string {
	if strings.HasPrefix(s, "#") {
		return ""
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "\t#"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, " \t")
}

// sequence parses the items of a block sequence whose dashes sit at indent.
func (p *yamlParser) sequence(indent, depth int) ([]any, error) {
	if depth > maxFrontmatterDepth {
		return nil, p.errorf(p.lines[p.pos], "nesting deeper than %d", maxFrontmatterDepth)
	}
	items := []any{}
	for p.skipBlank() {
		line := p.lines[p.pos]
		if line.indent < indent || line.indent == indent && !isSequenceItem(line.text) {
			break
		}
		if line.indent > indent {
			return nil, p.errorf(line, "unexpected indentation")
		}
		content := strings.TrimLeft(line.text[1:], " ")
		offset := indent + len(line.text) - len(content)
		var item any
		var err error
		switch {
		case content != "" && content[0] != '#' && (isSequenceItem(content) || looksLikeEntry(content)):
			// "- key: v" or "- - v": the item is a collection whose first
			// line starts after the dash.
			p.lines[p.pos] = yamlLine{num: line.num, raw: line.raw, indent: offset, text: content}
			if isSequenceItem(content) {
				item, err = p.sequence(offset, depth+1)
			} else {
				item, err = p.mapping(offset, depth+1)
			}
		default:
			p.pos++
			item, err = p.value(line, content, indent, depth, false)
		}
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	return items, nil
}

// looksLikeEntry reports whether a sequence item's content is a mapping
// entry ("key: value" or "key:"), as opposed to a scalar.
func looksLikeEntry(s string) bool {
	switch s[0] {
	case '"', '\'':
		_, n, err := parseQuoted(s)
		return err == nil && (s[n:] == ":" || strings.HasPrefix(s[n:], ": "))
	case '[', '{', '|', '>', '&', '*', '!':
		return false
	}
	s = stripComment(s)
	return strings.Contains(s, ": ") || strings.HasSuffix(s, ":")
}

// blockScalar parses a | or > scalar whose header is header, on line; its
// content is the following lines indented more than parentIndent.
func (p *yamlParser) blockScalar(line yamlLine, header string, parentIndent int) (string, error) {
	folded := header[0] == '>'
	chomp, explicit := byte(0), 0
	h := stripComment(header[1:])
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = c
		case c >= '1' && c <= '9' && explicit == 0:
			explicit = int(c - '0')
		default:
			return "", p.errorf(line, "bad block scalar header %q", header)
		}
	}
	// The content's indentation: explicit, or that of its first non-blank
	// line.
	contentIndent := 0
	if explicit > 0 {
		contentIndent = parentIndent + explicit
	} else {
		for j := p.pos; j < len(p.lines); j++ {
			if strings.TrimLeft(p.lines[j].raw, " ") != "" {
				contentIndent = p.lines[j].indent
				break
			}
		}
		if contentIndent <= parentIndent {
			contentIndent = parentIndent + 1
		}
	}
	var b strings.Builder
	emptyLines, readContent, moreIndented := 0, false, false
	for ; p.pos < len(p.lines); p.pos++ {
		raw := p.lines[p.pos].raw
		if strings.TrimLeft(raw, " ") == "" && len(raw) <= contentIndent {
			emptyLines++
			continue
		}
		if p.lines[p.pos].indent < contentIndent {
			if strings.TrimLeft(raw, " ") == "" {
				emptyLines++
				continue
			}
			break
		}
		text := raw[contentIndent:]
		switch {
		case !folded:
			b.WriteString(strings.Repeat("\n", emptyLines+boolInt(readContent)))
		case text[0] == ' ' || text[0] == '\t':
			moreIndented = true
			b.WriteString(strings.Repeat("\n", emptyLines+boolInt(readContent)))
		case moreIndented:
			moreIndented = false
			b.WriteString(strings.Repeat("\n", emptyLines+1))
		case emptyLines == 0:
			if readContent {
				b.WriteByte(' ')
			}
		default:
			b.WriteString(strings.Repeat("\n", emptyLines))
		}
		b.WriteString(text)
		readContent, emptyLines = true, 0
	}
	switch chomp {
	case '+':
		b.WriteString(strings.Repeat("\n", emptyLines+boolInt(readContent)))
	case 0:
		if readContent {
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// typedScalar types a one-line plain scalar as YAML 1.2's core schema does.
func typedScalar(s string) (any, error) {
	switch s {
	case "~", "null", "Null", "NULL":
		return nil, nil
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN":
		return nil, fmt.Errorf("%s is not a number JSON can carry", s)
	}
	if isCoreInt(s) {
		if base := map[string]int{"0x": 16, "0o": 8}[s[:min(2, len(s))]]; base != 0 {
			n, err := strconv.ParseInt(s[2:], base, 64)
			if err != nil {
				return nil, fmt.Errorf("integer %s is out of range", s)
			}
			return json.Number(strconv.FormatInt(n, 10)), nil
		}
		decimal := strings.TrimPrefix(s, "+")
		if n, err := strconv.ParseInt(decimal, 10, 64); err == nil {
			return json.Number(strconv.FormatInt(n, 10)), nil
		}
		// Beyond int64: the nearest float, as a JSON reader would take it.
		f, _ := strconv.ParseFloat(decimal, 64)
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	if isCoreFloat(s) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s is not a number JSON can carry", s)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return s, nil
}

// isCoreInt matches [-+]?[0-9]+, 0o[0-7]+ and 0x[0-9a-fA-F]+.
func isCoreInt(s string) bool {
	switch {
	case strings.HasPrefix(s, "0o"):
		return len(s) > 2 && strings.Trim(s[2:], "01234567") == ""
	case strings.HasPrefix(s, "0x"):
		return len(s) > 2 && strings.Trim(s[2:], "0123456789abcdefABCDEF") == ""
	}
	d := strings.TrimLeft(s, "+-")
	return len(s)-len(d) <= 1 && d != "" && strings.Trim(d, "0123456789") == ""
}

// isCoreFloat matches [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?.
func isCoreFloat(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	whole := digits()
	frac := 0
	if i < len(s) && s[i] == '.' {
		i++
		frac = digits()
	} else if whole == 0 {
		return false
	}
	if whole == 0 && frac == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
