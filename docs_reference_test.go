package main

import (
	"context"
	"database/sql"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The reference pages (docs/reference/*.md) are checked against the code
// they describe: the options and bounds against the option structs (a
// default is what the constructor makes of a zero value) and the command's
// flags, the error codes and messages against the library's source.

// docTable is a Markdown table of a page: the heading it stands under and
// its rows, each row its cells, trimmed.
type docTable struct {
	section string
	header  []string
	rows    [][]string
	lines   []int // each row's line in the page
}

// pageTables returns the tables of page, in order.
func pageTables(t *testing.T, page string) []docTable {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var tables []docTable
	section := ""
	var cur *docTable
	for i, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
		}
		if !strings.HasPrefix(line, "|") {
			cur = nil
			continue
		}
		cells := splitTableRow(line)
		switch {
		case cur == nil:
			tables = append(tables, docTable{section: section, header: cells})
			cur = &tables[len(tables)-1]
		case strings.Trim(line, "|-") == "":
		default:
			cur.rows = append(cur.rows, cells)
			cur.lines = append(cur.lines, i+1)
		}
	}
	return tables
}

// splitTableRow splits a table row into its cells; `\|` is a pipe inside a
// cell.
func splitTableRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "|"), "|")
	parts := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(strings.ReplaceAll(p, "\x00", "|"))
	}
	return parts
}

// column returns the index of the column named name in tab, failing the
// test when it has none.
func (tab docTable) column(t *testing.T, name string) int {
	t.Helper()
	i := slices.Index(tab.header, name)
	if i < 0 {
		t.Fatalf("the table under %q has no column %q (columns %q)", tab.section, name, tab.header)
	}
	return i
}

var codeSpan = regexp.MustCompile("`([^`]*)`")

// codeSpans returns the texts in backquotes of a cell.
func codeSpans(cell string) []string {
	var spans []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		spans = append(spans, m[1])
	}
	return spans
}

// leadingValue returns the value in backquotes a cell starts with, and
// whether it starts with one.
func leadingValue(cell string) (string, bool) {
	if !strings.HasPrefix(cell, "`") {
		return "", false
	}
	spans := codeSpans(cell)
	return spans[0], len(spans) > 0
}

// formatDefault is the text of a default value as the pages give it:
// durations without their zero units ("30m", "1h"), lists joined by
// commas; ok is false for a value that has no such text (a function, a
// pointer, a zero value).
func formatDefault(v any) (string, bool) {
	switch v := v.(type) {
	case time.Duration:
		return shortDuration(v), v != 0
	case []string:
		return strings.Join(v, ","), v != nil
	case string:
		return v, v != ""
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	}
	return "", false
}

// shortDuration is d as time.Duration.String writes it, without the zero
// units it ends with: 30m0s is "30m", 1h0m0s "1h".
func shortDuration(d time.Duration) string {
	s := d.String()
	for _, zero := range []string{"0s", "0m"} {
		if trimmed, ok := strings.CutSuffix(s, zero); ok && strings.ContainsAny(trimmed[len(trimmed)-1:], "hm") {
			s = trimmed
		}
	}
	return s
}

// requiredOption stands for the default of a field a constructor requires.
type requiredOption struct{}

// missingOption returns the error of the constructor of a struct given a
// valid value without the field name ("Struct.Field"); nil when the test
// knows no such field.
func missingOption(name string) error {
	d := DispatcherFunc(func(context.Context, *Request) Reply { return Reply{} })
	jwt := JWTVerifierOptions{Issuer: "https://auth.example.com", Resource: "https://mcp.example.com/mcp"}
	intro := IntrospectionVerifierOptions{Endpoint: "https://auth.example.com/introspect", ClientID: "c", ClientSecret: "s",
		Issuer: "https://auth.example.com", Resource: "https://mcp.example.com/mcp"}
	auth := AuthOptions{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"https://auth.example.com"}, Verifier: staticTokens{}}
	structName, field, _ := strings.Cut(name, ".")
	clear := func(v any) { reflect.ValueOf(v).Elem().FieldByName(field).SetZero() }
	var err error
	switch structName {
	case "Options":
		o := Options{Input: strings.NewReader(""), Output: io.Discard}
		clear(&o)
		_, err = NewTransport(d, o)
	case "RuntimeOptions":
		o := RuntimeOptions{ServerInfo: Implementation{Name: "n", Version: "v"}}
		clear(&o)
		_, err = NewRuntime(o)
	case "AuthOptions":
		clear(&auth)
		_, err = NewHTTPHandler(d, HTTPOptions{Auth: &auth})
	case "JWTVerifierOptions":
		clear(&jwt)
		_, err = NewJWTVerifier(jwt)
	case "IntrospectionVerifierOptions":
		clear(&intro)
		_, err = NewIntrospectionVerifier(intro)
	case "SQLTaskStoreOptions":
		o := SQLTaskStoreOptions{DB: &sql.DB{}}
		clear(&o)
		err = validateSQLTaskStoreOptions(&o)
	default:
		return nil
	}
	if err == nil {
		return fmt.Errorf("the constructor accepts %s zero", name)
	}
	return err
}

// optionDefaults returns, for each option struct the pages describe, the
// value of each of its fields that a constructor makes of the zero value
// (required fields given the least they need), by "Struct.Field".
func optionDefaults(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	// fields records v's fields as the defaults of the struct name; those
	// named required were given a value only because the constructor
	// needs one.
	fields := func(name string, v any, required ...string) {
		m := map[string]any{}
		rv := reflect.ValueOf(v)
		for _, f := range reflect.VisibleFields(rv.Type()) {
			if f.IsExported() && !f.Anonymous {
				m[f.Name] = rv.FieldByIndex(f.Index).Interface()
			}
		}
		for _, f := range required {
			m[f] = requiredOption{}
		}
		out[name] = m
	}
	exec, err := NewExecutor(ExecutorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Close()
	limits := exec.Stats()
	execDefaults := func(m map[string]any) {
		m["MaxConcurrency"], m["MaxQueue"], m["MaxInflightBytes"] = limits.MaxConcurrency, limits.MaxQueue, limits.MaxInflightBytes
	}

	var o Options
	if err := o.normalize(); err != nil {
		t.Fatal(err)
	}
	fields("Options", o, "Input", "Output")
	execDefaults(out["Options"])
	out["Options"]["RequestTimeout"] = exec.timeout

	ro := RuntimeOptions{ServerInfo: Implementation{Name: "n", Version: "v"}}
	if err := validateRuntimeOptions(&ro); err != nil {
		t.Fatal(err)
	}
	fields("RuntimeOptions", ro, "ServerInfo")

	h, err := NewHTTPHandler(DispatcherFunc(func(context.Context, *Request) Reply { return Reply{} }), HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	fields("HTTPOptions", h.opts)
	execDefaults(out["HTTPOptions"])
	out["HTTPOptions"]["RequestTimeout"] = exec.timeout
	out["HTTPOptions"]["MaxClientSessions"] = h.sessions.perClient

	ln, err := NewHTTPListener(&net.TCPListener{}, HTTPListenerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fields("HTTPListenerOptions", HTTPListenerOptions{MaxConnections: cap(ln.slots)})

	eo := ExecutorOptions{MaxConcurrency: limits.MaxConcurrency, MaxQueue: limits.MaxQueue, Timeout: exec.timeout, MaxInflightBytes: limits.MaxInflightBytes}
	fields("ExecutorOptions", eo)

	var to TaskOptions
	if err := validateTaskOptions(&to); err != nil {
		t.Fatal(err)
	}
	fields("TaskOptions", to)
	fields("SkillsOptions", SkillsOptions{})
	fields("AuthOptions", AuthOptions{}, "Resource", "AuthorizationServers", "Verifier")

	// DPoPOptions' defaults apply once DPoP is on; the Mode's is off.
	resource, err := parseResourceURI("https://mcp.example.com/mcp")
	if err != nil {
		t.Fatal(err)
	}
	dg, err := newDPoPGate(DPoPOptions{Mode: DPoPAllow}, resource, nil)
	if err != nil {
		t.Fatal(err)
	}
	fields("DPoPOptions", DPoPOptions{Algorithms: dg.algs, ProofWindow: dg.window, MaxProofs: dg.ledger.max, MaxClientProofs: dg.ledger.perClient})

	jo := JWTVerifierOptions{Issuer: "https://auth.example.com", Resource: "https://mcp.example.com/mcp"}
	jv, err := NewJWTVerifier(jo)
	if err != nil {
		t.Fatal(err)
	}
	if err := normalizeIssuerOptions("JWTVerifierOptions", &jo.ClockSkew, &jo.FetchTimeout, &jo.MaxResponseBytes, &jo.Logger); err != nil {
		t.Fatal(err)
	}
	jo.RefreshInterval, jo.MaxKeyAge = jv.keys.minInterval, jv.keys.maxAge
	if jv.skew != jo.ClockSkew {
		t.Fatalf("NewJWTVerifier's clock skew %v is not normalizeIssuerOptions' %v", jv.skew, jo.ClockSkew)
	}
	fields("JWTVerifierOptions", jo, "Issuer", "Resource")

	iop := IntrospectionVerifierOptions{Endpoint: "https://auth.example.com/introspect", ClientID: "c", ClientSecret: "s",
		Issuer: "https://auth.example.com", Resource: "https://mcp.example.com/mcp"}
	iv, err := NewIntrospectionVerifier(iop)
	if err != nil {
		t.Fatal(err)
	}
	if err := normalizeIssuerOptions("IntrospectionVerifierOptions", &iop.ClockSkew, &iop.FetchTimeout, &iop.MaxResponseBytes, &iop.Logger); err != nil {
		t.Fatal(err)
	}
	iop.CacheTTL, iop.MaxConcurrent, iop.MaxCacheEntries = iv.ttl, cap(iv.slots), iv.cache.max
	fields("IntrospectionVerifierOptions", iop, "Endpoint", "ClientID", "ClientSecret", "Issuer", "Resource")

	tel, err := NewTelemetry(TelemetryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	fields("TelemetryOptions", tel.opts)

	so := SQLTaskStoreOptions{DB: &sql.DB{}}
	if err := validateSQLTaskStoreOptions(&so); err != nil {
		t.Fatal(err)
	}
	so.Replica = "" // one of its own per process: no fixed default
	fields("SQLTaskStoreOptions", so, "DB")
	return out
}

// allFlags returns the reference command's flags by name, with the
// PostgreSQL command's (postgres/main_taskstore.go, read as text: it is
// another module), whose defaults are given as "".
func allFlags(t *testing.T) map[string]flagUsage {
	t.Helper()
	flags, err := commandFlags()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]flagUsage{}
	for _, f := range flags {
		byName[f.name] = f
	}
	src, err := os.ReadFile("postgres/main_taskstore.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?:fs\.\w+Var\(|optionVar\(fs, )&f\.\w+, "([a-z-]+)"`).FindAllStringSubmatch(string(src), -1) {
		byName[m[1]] = flagUsage{name: m[1]}
	}
	return byName
}

// checkFlagCell checks the flags a cell names (each `-name` in backquotes)
// against the command's; def, when not "", is the default they must have
// (a flag whose default is 0 means the option's default, and is accepted).
func checkFlagCell(t *testing.T, where, cell string, flags map[string]flagUsage, def string) {
	t.Helper()
	for _, span := range codeSpans(cell) {
		name, ok := strings.CutPrefix(span, "-")
		if !ok {
			continue
		}
		f, known := flags[name]
		switch {
		case !known:
			t.Errorf("%s: no flag -%s", where, name)
		case def != "" && f.def != "" && f.def != "0" && normalizeFlagDefault(f.def) != def:
			t.Errorf("%s: -%s defaults to %s, the page says %s", where, name, f.def, def)
		}
	}
}

// normalizeFlagDefault writes a flag's default as formatDefault writes the
// option's: durations without their zero units.
func normalizeFlagDefault(def string) string {
	if d, err := time.ParseDuration(def); err == nil {
		return shortDuration(d)
	}
	return def
}

// TestOptionsReference: docs/reference/options.md has a section per option
// struct with every exported field, and each default and flag it gives is
// the code's.
func TestOptionsReference(t *testing.T) {
	defaults := optionDefaults(t)
	flags := allFlags(t)
	seen := map[string]bool{}
	for _, tab := range pageTables(t, "docs/reference/options.md") {
		want, known := defaults[tab.section]
		if !known {
			t.Errorf("options.md: section %q names no option struct the test knows", tab.section)
			continue
		}
		seen[tab.section] = true
		field, def, flag := tab.column(t, "field"), tab.column(t, "default"), tab.column(t, "flag")
		listed := map[string]bool{}
		for i, row := range tab.rows {
			where := fmt.Sprintf("options.md:%d", tab.lines[i])
			name := strings.Trim(row[field], "`")
			value, ok := want[name]
			if !ok {
				t.Errorf("%s: %s has no field %s", where, tab.section, name)
				continue
			}
			if listed[name] {
				t.Errorf("%s: %s.%s is listed twice", where, tab.section, name)
			}
			listed[name] = true
			got, scalar := formatDefault(value)
			pageValue, pageHas := leadingValue(row[def])
			_, required := value.(requiredOption)
			if required {
				// The constructor refuses the zero value, naming the field.
				if err := missingOption(tab.section + "." + name); err == nil || !strings.Contains(err.Error(), name) {
					t.Errorf("%s: %s.%s is not refused when missing: %v", where, tab.section, name, err)
				}
			}
			switch {
			case required != (row[def] == "required"):
				t.Errorf("%s: %s.%s is required: %v, the page says %q", where, tab.section, name, required, row[def])
			case scalar && pageValue != got:
				t.Errorf("%s: %s.%s defaults to %s, the page says %q", where, tab.section, name, got, row[def])
			case !scalar && pageHas && pageValue != "0":
				t.Errorf("%s: %s.%s has no default value of its own, the page says %q", where, tab.section, name, row[def])
			}
			if !scalar {
				got = ""
			}
			checkFlagCell(t, where, row[flag], flags, got)
		}
		for name := range want {
			if !listed[name] {
				t.Errorf("options.md: %s.%s is missing", tab.section, name)
			}
		}
	}
	for name := range defaults {
		if !seen[name] {
			t.Errorf("options.md has no section %s", name)
		}
	}
}

// boundField reports whether an option field bounds something a client can
// make the server hold or wait for: the fields bounds.md must list.
var boundField = regexp.MustCompile(`^Max|Timeout$|TTL$|^(Lease|PollBurst)$`)

// fixedBounds are the bounds without an option, by their row in bounds.md:
// each checks the page's value against the code.
func fixedBounds(t *testing.T) map[string]func(value string) error {
	equal := func(want any) func(string) error {
		return func(value string) error {
			if got, _ := formatDefault(want); got != value {
				return fmt.Errorf("the code's is %s", got)
			}
			return nil
		}
	}
	// atMost checks that an option accepts the page's value and refuses a
	// nanosecond more.
	atMost := func(try func(time.Duration) error) func(string) error {
		return func(value string) error {
			d, err := time.ParseDuration(value)
			if err != nil {
				return err
			}
			if err := try(d); err != nil {
				return fmt.Errorf("%v is refused: %v", d, err)
			}
			if try(d+1) == nil {
				return fmt.Errorf("%v is accepted", d+1)
			}
			return nil
		}
	}
	jwt := func(o JWTVerifierOptions) error {
		o.Issuer, o.Resource = "https://auth.example.com", "https://mcp.example.com/mcp"
		_, err := NewJWTVerifier(o)
		return err
	}
	return map[string]func(string) error{
		"a read of the input":           equal(defaultReadChunk),
		"lines read ahead of the owner": equal(linesBuffer),
		"bytes read ahead, held behind an `initialize`, or waiting for the output": equal(aheadBytes),
		"a string request id":                    equal(maxIDBytes),
		"digits of an integer literal":           equal(maxIntegerDigits),
		"nesting of objects and arrays":          equal(maxJSONDepth),
		"a string `progressToken`":               equal(maxProgressTokenBytes),
		"progress reports of a request":          equal(maxProgressReports),
		"a progress message":                     equal(maxProgressMessage),
		"notifications of an inline call":        equal(maxInlineNotifications),
		"a subscribed URI":                       equal(maxSubscriptionURIBytes),
		"URIs or task IDs of one listen request": equal(maxListenResources),
		"values of a completion":                 equal(maxCompletionValues),
		"events kept per SSE stream":             equal(maxStreamEvents),
		"ended SSE streams kept per session":     equal(maxSessionStreams),
		"files of a skill":                       equal(MaxSkillFiles),
		"bytes of a skill":                       equal(MaxSkillBytes),
		"depth of a skill's directories":         equal(maxSkillDepth),
		"bytes of a frontmatter":                 equal(maxFrontmatterBytes),
		"nesting of a frontmatter":               equal(maxFrontmatterDepth),
		"a JWT verifier's `ClockSkew`":           atMost(func(d time.Duration) error { return jwt(JWTVerifierOptions{ClockSkew: d}) }),
		"a JWT verifier's `RefreshInterval`":     atMost(func(d time.Duration) error { return jwt(JWTVerifierOptions{RefreshInterval: d}) }),
		"an introspection verifier's `CacheTTL`": atMost(func(d time.Duration) error {
			_, err := NewIntrospectionVerifier(IntrospectionVerifierOptions{Endpoint: "https://auth.example.com/introspect", ClientID: "c", ClientSecret: "s",
				Issuer: "https://auth.example.com", Resource: "https://mcp.example.com/mcp", CacheTTL: d})
			return err
		}),
		"series of a metric": equal(maxSeries),
	}
}

// processBounds are the rows of bounds.md's "The process": what the
// command sets, checked the same way.
func processBounds(t *testing.T) map[string]func(value string) error {
	flags, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(nil, DefaultMaxHeaderBytes, quietLogger(), nil)
	equal := func(want any) func(string) error {
		return func(value string) error {
			if got, _ := formatDefault(want); got != value {
				return fmt.Errorf("the code's is %s", got)
			}
			return nil
		}
	}
	return map[string]func(string) error{
		"soft memory limit": func(value string) error {
			// The formula the row states, at the defaults and elsewhere.
			for _, c := range []config{flags, {maxInflightBytes: 1 << 20, maxLineBytes: 1000}} {
				if got, want := memoryLimit(c), int64(c.maxInflightBytes)+4*int64(c.maxLineBytes)+16<<20; got != want {
					return fmt.Errorf("memoryLimit is %d where the formula gives %d", got, want)
				}
			}
			return equal(memoryLimit(flags))(value)
		},
		"collector target with `-http`":           equal(httpGCPercent),
		"request header lines with `-http`":       equal(srv.ReadHeaderTimeout),
		"idle keep-alive connection with `-http`": equal(srv.IdleTimeout),
		"telemetry flush at exit":                 equal(telemetryFlushTimeout),
	}
}

// TestBoundsReference: every bounding option field has a row in
// docs/reference/bounds.md, whose default is the field's and its flag's, and
// each fixed bound and each of the process's is the code's.
func TestBoundsReference(t *testing.T) {
	defaults := optionDefaults(t)
	flags := allFlags(t)
	fixed, process := fixedBounds(t), processBounds(t)
	listed := map[string]bool{}
	for _, tab := range pageTables(t, "docs/reference/bounds.md") {
		bound := tab.column(t, "bound")
		if checks := map[string]map[string]func(string) error{"Fixed bounds": fixed, "The process": process}[tab.section]; checks != nil {
			value := tab.column(t, "value")
			for i, row := range tab.rows {
				where := fmt.Sprintf("bounds.md:%d", tab.lines[i])
				check, ok := checks[row[bound]]
				if !ok {
					t.Errorf("%s: the test knows no bound %q", where, row[bound])
					continue
				}
				listed[tab.section+"/"+row[bound]] = true
				v, _ := leadingValue(row[value])
				if err := check(v); err != nil {
					t.Errorf("%s: %s: the page says %q: %v", where, row[bound], row[value], err)
				}
			}
			for name := range checks {
				if !listed[tab.section+"/"+name] {
					t.Errorf("bounds.md: %s has no row %q", tab.section, name)
				}
			}
			continue
		}
		def, flag, option := tab.column(t, "default"), tab.column(t, "flag"), tab.column(t, "option")
		for i, row := range tab.rows {
			where := fmt.Sprintf("bounds.md:%d", tab.lines[i])
			pageValue, _ := leadingValue(row[def])
			for _, span := range codeSpans(row[option]) {
				structName, fieldName, ok := strings.Cut(span, ".")
				fields, known := defaults[structName]
				if !ok || !known {
					continue // not an option of ours (http.Server's, say)
				}
				value, ok := fields[fieldName]
				if !ok {
					t.Errorf("%s: %s has no field %s", where, structName, fieldName)
					continue
				}
				listed[span] = true
				if got, scalar := formatDefault(value); scalar && got != pageValue {
					t.Errorf("%s: %s defaults to %s, the page says %q", where, span, got, row[def])
				}
			}
			checkFlagCell(t, where, row[flag], flags, pageValue)
		}
	}
	for structName, fields := range defaults {
		for name := range fields {
			if boundField.MatchString(name) && !listed[structName+"."+name] {
				t.Errorf("bounds.md has no row for %s.%s", structName, name)
			}
		}
	}
}

// libraryMessage is a message of a JSON-RPC error the library sends: its
// text up to the first part that varies (all of it when none does), and
// its code when the source names one.
type libraryMessage struct {
	prefix string
	whole  bool // the message never varies
	code   int  // 0 when the source does not say
	pos    string
}

// libraryMessages reads the library's source and returns the message of
// every RPCError it builds: a Message given as text (a literal, a constant,
// a concatenation or fmt.Sprintf starting with one), or as a parameter or
// variable of the function that builds it, in which case the text comes
// from the callers (and their callers) or the variable's assignments.
func libraryMessages(t *testing.T) []libraryMessage {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	consts := map[string]string{} // package-level string constants
	codes := map[string]int{}     // the Code* constants
	funcs := map[string]*ast.FuncDecl{}
	for _, e := range entries {
		if !libraryFile(e.Name()) {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					funcs[d.Name.Name] = d
				}
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i >= len(vs.Values) {
							continue
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
							switch lit.Kind {
							case token.STRING:
								consts[name.Name], _ = strconv.Unquote(lit.Value)
							}
						}
						if u, ok := vs.Values[i].(*ast.UnaryExpr); ok && strings.HasPrefix(name.Name, "Code") {
							if lit, ok := u.X.(*ast.BasicLit); ok && u.Op == token.SUB {
								n, _ := strconv.Atoi(lit.Value)
								codes[name.Name] = -n
							}
						}
					}
				}
			}
		}
	}
	// text returns the constant prefix of a string expression, and whether
	// the expression is all constant.
	var text func(e ast.Expr) (string, bool)
	text = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind == token.STRING {
				s, _ := strconv.Unquote(e.Value)
				return s, true
			}
		case *ast.Ident:
			if s, ok := consts[e.Name]; ok {
				return s, true
			}
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				x, whole := text(e.X)
				if !whole {
					return x, false
				}
				y, whole := text(e.Y)
				return x + y, whole
			}
		case *ast.CallExpr:
			if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(e.Args) > 0 {
				format, whole := text(e.Args[0])
				if i := strings.IndexByte(format, '%'); i >= 0 {
					return format[:i], false
				}
				return format, whole
			}
			if id, ok := e.Fun.(*ast.Ident); ok && funcs[id.Name] != nil {
				// A function returning the message: its return's text.
				var prefix string
				ast.Inspect(funcs[id.Name].Body, func(n ast.Node) bool {
					if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) == 1 && prefix == "" {
						prefix, _ = text(r.Results[0])
					}
					return true
				})
				return prefix, false
			}
		}
		return "", false
	}
	codeOf := func(e ast.Expr) int {
		if id, ok := e.(*ast.Ident); ok {
			return codes[id.Name]
		}
		return 0
	}
	var msgs []libraryMessage
	add := func(e ast.Expr, code int) {
		prefix, whole := text(e)
		if prefix != "" {
			msgs = append(msgs, libraryMessage{prefix: prefix, whole: whole, code: code, pos: fset.Position(e.Pos()).String()})
		}
	}
	// carriers[f] are the indexes of f's parameters that become a message,
	// with the code that message gets (0: unknown).
	type carried struct{ index, code int }
	carriers := map[string][]carried{}
	// carriedArgs calls f with each argument that a call in n passes to a
	// carrier's carried parameter.
	carriedArgs := func(n ast.Node, f func(arg ast.Expr, c carried)) {
		ast.Inspect(n, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if callee, ok := call.Fun.(*ast.Ident); ok {
					for _, c := range carriers[callee.Name] {
						if c.index < len(call.Args) {
							f(call.Args[c.index], c)
						}
					}
				}
			}
			return true
		})
	}
	paramIndex := func(fn *ast.FuncDecl, name string) int {
		i := 0
		for _, field := range fn.Type.Params.List {
			for _, n := range field.Names {
				if n.Name == name {
					return i
				}
				i++
			}
		}
		return -1
	}
	// assigned returns the expressions assigned to the variable name in fn.
	assigned := func(fn *ast.FuncDecl, name string) []ast.Expr {
		var exprs []ast.Expr
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if a, ok := n.(*ast.AssignStmt); ok && (a.Tok == token.ASSIGN || a.Tok == token.DEFINE) {
				for i, lhs := range a.Lhs {
					if id, ok := lhs.(*ast.Ident); ok && id.Name == name && i < len(a.Rhs) {
						exprs = append(exprs, a.Rhs[i])
					}
				}
			}
			return true
		})
		return exprs
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fn, _ := d.(*ast.FuncDecl) // nil for a package-level var
			ast.Inspect(d, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				if id, isIdent := lit.Type.(*ast.Ident); !isIdent || id.Name != "RPCError" {
					// A refusal's message on its way to httpError (getVerdict).
					for _, elt := range lit.Elts {
						if kv, ok := elt.(*ast.KeyValueExpr); ok {
							if key, ok := kv.Key.(*ast.Ident); ok && key.Name == "message" {
								add(kv.Value, 0)
							}
						}
					}
					return true
				}
				var message ast.Expr
				code := 0
				for _, elt := range lit.Elts {
					kv := elt.(*ast.KeyValueExpr)
					switch kv.Key.(*ast.Ident).Name {
					case "Message":
						message = kv.Value
					case "Code":
						code = codeOf(kv.Value)
					}
				}
				id, isIdent := message.(*ast.Ident)
				switch {
				case message == nil:
				case isIdent && fn != nil && fn.Recv == nil && paramIndex(fn, id.Name) >= 0:
					carriers[fn.Name.Name] = append(carriers[fn.Name.Name], carried{paramIndex(fn, id.Name), code})
				case isIdent && fn != nil && consts[id.Name] == "":
					for _, e := range assigned(fn, id.Name) {
						add(e, code)
					}
				default:
					add(message, code)
				}
				return true
			})
		}
	}
	// A function that passes its own parameter to a carrier carries it too.
	for changed := true; changed; {
		changed = false
		for _, fn := range funcs {
			carriedArgs(fn.Body, func(arg ast.Expr, c carried) {
				id, ok := arg.(*ast.Ident)
				if !ok {
					return
				}
				if i := paramIndex(fn, id.Name); i >= 0 && !slices.Contains(carriers[fn.Name.Name], carried{i, c.code}) {
					carriers[fn.Name.Name] = append(carriers[fn.Name.Name], carried{i, c.code})
					changed = true
				}
			})
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fn, _ := d.(*ast.FuncDecl)
			carriedArgs(d, func(arg ast.Expr, c carried) {
				if id, ok := arg.(*ast.Ident); ok && fn != nil && consts[id.Name] == "" {
					for _, e := range assigned(fn, id.Name) {
						add(e, c.code)
					}
					return
				}
				add(arg, c.code)
			})
		}
	}
	return msgs
}

// pageMessage is a message as errors.md gives it: "…" stands for the parts
// that vary.
func pagePrefix(m string) (prefix string, whole bool) {
	if i := strings.Index(m, "…"); i >= 0 {
		return m[:i], false
	}
	return m, true
}

// TestErrorsReference: docs/reference/errors.md lists every error code the
// library defines with its value, every message the library's source gives
// an RPCError (with its code, where the source names it), and every HTTP
// status the transport answers with; and nothing else.
func TestErrorsReference(t *testing.T) {
	msgs := libraryMessages(t)
	if len(msgs) < 50 {
		t.Fatalf("found %d messages in the library; the reader is broken", len(msgs))
	}
	type pageRow struct {
		code        int
		prefix      string
		whole, used bool
		where       string
	}
	var rows []*pageRow
	codes := map[int]string{}
	statuses := map[int]bool{}
	for _, tab := range pageTables(t, "docs/reference/errors.md") {
		switch tab.section {
		case "Codes":
			code, constant := tab.column(t, "code"), tab.column(t, "constant")
			for _, row := range tab.rows {
				n, err := strconv.Atoi(strings.Trim(row[code], "`"))
				if err != nil {
					t.Errorf("errors.md: code %q is not a number", row[code])
				}
				codes[n] = strings.Trim(row[constant], "`")
			}
		case "Messages":
			code, message := tab.column(t, "code"), tab.column(t, "message")
			for i, row := range tab.rows {
				n, err := strconv.Atoi(strings.Trim(row[code], "`"))
				if err != nil {
					t.Errorf("errors.md:%d: code %q is not a number", tab.lines[i], row[code])
				}
				for _, m := range codeSpans(row[message]) {
					prefix, whole := pagePrefix(m)
					rows = append(rows, &pageRow{code: n, prefix: prefix, whole: whole, where: fmt.Sprintf("errors.md:%d", tab.lines[i])})
				}
			}
		case "HTTP statuses":
			status := tab.column(t, "status")
			for _, row := range tab.rows {
				n, err := strconv.Atoi(strings.Fields(row[status])[0])
				if err != nil {
					t.Errorf("errors.md: status %q does not start with a number", row[status])
				}
				statuses[n] = true
			}
		}
	}
	// The codes: every Code* constant, with its value.
	defined := map[string]int{"CodeParseError": CodeParseError, "CodeInvalidRequest": CodeInvalidRequest, "CodeMethodNotFound": CodeMethodNotFound,
		"CodeInvalidParams": CodeInvalidParams, "CodeInternalError": CodeInternalError, "CodeResourceNotFound": CodeResourceNotFound,
		"CodeAccessDenied": CodeAccessDenied, "CodeHeaderMismatch": CodeHeaderMismatch, "CodeMissingCapability": CodeMissingCapability,
		"CodeUnsupportedVersion": CodeUnsupportedVersion}
	for name, value := range defined {
		if codes[value] != name {
			t.Errorf("errors.md: code %d should be listed as %s (it says %q)", value, name, codes[value])
		}
	}
	if n := len(exportedCodeConstants(t)); n != len(defined) {
		t.Errorf("the library defines %d Code* constants, the test knows %d", n, len(defined))
	}
	if len(codes) != len(defined) {
		t.Errorf("errors.md lists %d codes, the library defines %d", len(codes), len(defined))
	}
	// The messages: each of the library's is covered by a row of its code,
	// and each row covers one of the library's.
	for _, m := range msgs {
		covered := false
		for _, r := range rows {
			fits := strings.HasPrefix(m.prefix, r.prefix) && (!r.whole || m.whole && m.prefix == r.prefix) ||
				!m.whole && strings.HasPrefix(r.prefix, m.prefix) && !r.whole
			if fits && (m.code == 0 || m.code == r.code) {
				covered, r.used = true, true
			}
		}
		if !covered {
			t.Errorf("errors.md lists no message %q (code %d, %s)", m.prefix+map[bool]string{false: "…"}[m.whole], m.code, m.pos)
		}
	}
	for _, r := range rows {
		if !r.used {
			t.Errorf("%s: the library sends no message %q with code %d", r.where, r.prefix, r.code)
		}
	}
	// The statuses: every http.Status* the transport's files name.
	for status := range httpStatusesInSource(t) {
		if !statuses[status] {
			t.Errorf("errors.md lists no HTTP status %d", status)
		}
	}
	for status := range statuses {
		if !httpStatusesInSource(t)[status] && !netHTTPStatuses[status] {
			t.Errorf("errors.md lists HTTP status %d, which the transport never sends", status)
		}
	}
}

// exportedCodeConstants returns the names of the library's Code* constants.
func exportedCodeConstants(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, f := range parseLibrary(t) {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, spec := range g.Specs {
					for _, n := range spec.(*ast.ValueSpec).Names {
						if strings.HasPrefix(n.Name, "Code") && n.IsExported() {
							names = append(names, n.Name)
						}
					}
				}
			}
		}
	}
	return names
}

// httpStatusesInSource returns the statuses the HTTP transport's and
// authorization's files name (http.StatusX).
func httpStatusesInSource(t *testing.T) map[int]bool {
	t.Helper()
	statuses := map[int]bool{}
	for name, f := range parseLibrary(t) {
		if !strings.HasPrefix(name, "http") && !strings.HasPrefix(name, "auth") {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, isIdent := sel.X.(*ast.Ident); !isIdent || x.Name != "http" || !strings.HasPrefix(sel.Sel.Name, "Status") {
				return true
			}
			if code, ok := httpStatusCodes[sel.Sel.Name]; ok {
				statuses[code] = true
			} else if sel.Sel.Name != "StatusText" {
				t.Errorf("the test does not know http.%s", sel.Sel.Name)
			}
			return true
		})
	}
	return statuses
}

// netHTTPStatuses are the statuses net/http itself answers with under the
// settings the transport gives it: 431 beyond MaxHeaderBytes.
var netHTTPStatuses = map[int]bool{431: true}

// httpStatusCodes are net/http's status constants the transport may name.
var httpStatusCodes = map[string]int{
	"StatusOK": 200, "StatusAccepted": 202, "StatusNoContent": 204, "StatusBadRequest": 400, "StatusUnauthorized": 401,
	"StatusForbidden": 403, "StatusNotFound": 404, "StatusMethodNotAllowed": 405, "StatusNotAcceptable": 406,
	"StatusRequestTimeout": 408, "StatusConflict": 409, "StatusRequestEntityTooLarge": 413,
	"StatusUnsupportedMediaType": 415, "StatusRequestHeaderFieldsTooLarge": 431, "StatusInternalServerError": 500,
	"StatusServiceUnavailable": 503, "StatusBadGateway": 502, "StatusGatewayTimeout": 504, "StatusTooManyRequests": 429,
}
