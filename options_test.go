package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// optionField is what the options' rule says of one numeric field of an
// options struct: its effective value at 0 (the default), and with
// Unlimited and None (nil: the field refuses it).
type optionField struct {
	name                 string // a path from the struct: "MaxQueue", "Limits.MaxTasks"
	def, unlimited, none any
}

// optionsStruct is one options struct and how its constructor makes it
// effective.
type optionsStruct struct {
	name string
	as   string // as its errors name it, when not name
	// zero returns a valid value whose numeric fields are all 0.
	zero func() any
	// build runs the struct's constructor (or the validation it runs) on
	// opts and returns the effective value of each numeric field, and of
	// Logger for a struct that has one.
	build func(t *testing.T, opts any) (map[string]any, error)
	// prefix starts the constructor's errors ("mcpstdio: ").
	prefix string
	fields []optionField
}

// optionsStructs are every options struct of the package.
func optionsStructs() []optionsStruct {
	const mib = 1 << 20
	info := Implementation{Name: "srv", Version: "1.0"}
	return []optionsStruct{
		{
			name: "Options", prefix: "mcpstdio: ",
			zero: func() any { return Options{Input: strings.NewReader(""), Output: io.Discard} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				tr, err := NewTransport(newTestDispatcher(), opts.(Options))
				if err != nil {
					return nil, err
				}
				defer tr.executor.Close()
				st, o := tr.executor.Stats(), tr.opts
				return map[string]any{"WriteTimeout": o.WriteTimeout, "MaxLineBytes": o.MaxLineBytes, "RequestTimeout": requestDeadline(o.RequestTimeout, tr.executor),
					"MaxSubscriptions": o.MaxSubscriptions, "MaxConcurrency": st.MaxConcurrency, "MaxQueue": st.MaxQueue, "MaxInflightBytes": st.MaxInflightBytes, "Logger": o.Logger}, nil
			},
			fields: []optionField{
				{"WriteTimeout", DefaultWriteTimeout, nil, nil},
				{"MaxLineBytes", DefaultMaxLineBytes, nil, nil},
				{"RequestTimeout", defaultJobTimeout, time.Duration(Unlimited), nil},
				{"MaxSubscriptions", DefaultMaxSubscriptions, nil, nil},
				{"MaxConcurrency", defaultMaxConcurrency, nil, nil},
				{"MaxQueue", defaultMaxQueue, Unlimited, 0},
				{"MaxInflightBytes", DefaultMaxInflightBytes, Unlimited, nil},
			},
		},
		{
			name: "ExecutorOptions", prefix: "mcpstdio: ",
			zero: func() any { return ExecutorOptions{} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				e, err := NewExecutor(opts.(ExecutorOptions))
				if err != nil {
					return nil, err
				}
				defer e.Close()
				st := e.Stats()
				return map[string]any{"MaxConcurrency": st.MaxConcurrency, "MaxQueue": st.MaxQueue, "Timeout": e.timeout, "MaxInflightBytes": st.MaxInflightBytes,
					"MaxClientConcurrency": st.MaxClientConcurrency, "MaxClientQueue": st.MaxClientQueue, "MaxClientInflightBytes": st.MaxClientInflightBytes}, nil
			},
			fields: []optionField{
				{"MaxConcurrency", defaultMaxConcurrency, nil, nil},
				{"MaxQueue", defaultMaxQueue, Unlimited, 0},
				{"Timeout", defaultJobTimeout, time.Duration(Unlimited), nil},
				{"MaxInflightBytes", DefaultMaxInflightBytes, Unlimited, nil},
				{"MaxClientConcurrency", defaultMaxConcurrency, nil, nil},
				{"MaxClientQueue", defaultMaxQueue, nil, nil},
				{"MaxClientInflightBytes", DefaultMaxInflightBytes, nil, nil},
			},
		},
		{
			name: "HTTPOptions", prefix: "mcpstdio: ",
			zero: func() any { return HTTPOptions{} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				h, err := NewHTTPHandler(newTestDispatcher(), opts.(HTTPOptions))
				if err != nil {
					return nil, err
				}
				defer h.Close()
				st, o := h.executor.Stats(), h.opts
				return map[string]any{"MaxBodyBytes": o.MaxBodyBytes, "RequestTimeout": requestDeadline(o.RequestTimeout, h.executor), "MaxSubscriptions": o.MaxSubscriptions,
					"MaxListenStreams": o.MaxListenStreams, "MaxSessions": h.sessions.max, "MaxClientSessions": h.sessions.perClient, "SessionIdleTimeout": o.SessionIdleTimeout,
					"KeepAlive": o.KeepAlive, "WriteTimeout": o.WriteTimeout, "SSERetry": o.SSERetry, "MaxSessionReplayBytes": o.MaxSessionReplayBytes,
					"MaxReplayBytes": o.MaxReplayBytes, "ReadBodyTimeout": o.ReadBodyTimeout, "MaxConcurrency": st.MaxConcurrency, "MaxQueue": st.MaxQueue,
					"MaxInflightBytes": st.MaxInflightBytes, "MaxClientConcurrency": st.MaxClientConcurrency, "MaxClientQueue": st.MaxClientQueue,
					"MaxClientInflightBytes": st.MaxClientInflightBytes, "Logger": o.Logger}, nil
			},
			fields: []optionField{
				{"MaxBodyBytes", DefaultMaxBodyBytes, nil, nil},
				{"RequestTimeout", defaultJobTimeout, time.Duration(Unlimited), nil},
				{"MaxSubscriptions", DefaultMaxSubscriptions, nil, nil},
				{"MaxListenStreams", DefaultMaxListenStreams, nil, nil},
				{"MaxSessions", DefaultMaxSessions, nil, nil},
				{"MaxClientSessions", DefaultMaxSessions, nil, nil}, // 0, the default: all of MaxSessions
				{"SessionIdleTimeout", DefaultSessionIdleTimeout, nil, nil},
				{"KeepAlive", DefaultKeepAlive, nil, nil},
				{"WriteTimeout", DefaultWriteTimeout, nil, nil},
				{"SSERetry", DefaultSSERetry, nil, nil},
				{"MaxSessionReplayBytes", DefaultMaxSessionReplayBytes, nil, nil},
				{"MaxReplayBytes", DefaultMaxReplayBytes, nil, nil},
				{"ReadBodyTimeout", DefaultReadBodyTimeout, nil, nil},
				{"MaxConcurrency", defaultMaxConcurrency, nil, nil},
				{"MaxQueue", defaultMaxQueue, Unlimited, 0},
				{"MaxInflightBytes", DefaultMaxInflightBytes, Unlimited, nil},
				{"MaxClientConcurrency", defaultMaxConcurrency, nil, nil},
				{"MaxClientQueue", defaultMaxQueue, nil, nil},
				{"MaxClientInflightBytes", DefaultMaxInflightBytes, nil, nil},
			},
		},
		{
			name: "HTTPListenerOptions", prefix: "mcpstdio: ",
			zero: func() any { return HTTPListenerOptions{} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				ln, err := NewHTTPListener(nil, opts.(HTTPListenerOptions))
				if err != nil {
					return nil, err
				}
				return map[string]any{"MaxConnections": cap(ln.slots)}, nil
			},
			fields: []optionField{{"MaxConnections", DefaultMaxConnections, nil, nil}},
		},
		{
			name: "RuntimeOptions", prefix: "mcpstdio: ",
			zero: func() any { return RuntimeOptions{ServerInfo: info} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				rt, err := NewRuntime(opts.(RuntimeOptions))
				if err != nil {
					return nil, err
				}
				return map[string]any{"PageSize": rt.pageSize, "CacheTTLMs": rt.ttlMs, "ClientRequestTimeout": rt.clientRequestTimeout,
					"RequestStateTTL": rt.states.ttl, "Logger": rt.logger}, nil
			},
			fields: []optionField{
				{"PageSize", defaultPageSize, nil, nil},
				{"CacheTTLMs", int64(0), nil, nil},
				{"ClientRequestTimeout", defaultClientRequestTimeout, time.Duration(Unlimited), nil},
				{"RequestStateTTL", defaultRequestStateTTL, time.Duration(Unlimited), nil},
			},
		},
		{
			name: "TaskOptions", prefix: "mcpstdio: ",
			zero: func() any { return TaskOptions{} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				rt, err := NewRuntime(RuntimeOptions{ServerInfo: info, Tasks: opts.(TaskOptions)})
				if err != nil {
					return nil, err
				}
				o := rt.tasks.(*taskManager).opts
				return map[string]any{"MaxTasks": o.MaxTasks, "MaxTasksPerOwner": o.MaxTasksPerOwner, "MaxBytes": o.MaxBytes, "MaxBytesPerOwner": o.MaxBytesPerOwner,
					"TTL": o.TTL, "PollInterval": o.PollInterval, "PollBurst": o.PollBurst}, nil
			},
			fields: []optionField{
				{"MaxTasks", DefaultMaxTasks, nil, nil},
				{"MaxTasksPerOwner", DefaultMaxTasksPerOwner, nil, nil},
				{"MaxBytes", int64(DefaultMaxTaskBytes), nil, nil},
				{"MaxBytesPerOwner", int64(DefaultMaxTaskBytesOwner), nil, nil},
				{"TTL", DefaultTaskTTL, nil, nil},
				{"PollInterval", DefaultTaskPollInterval, nil, nil},
				{"PollBurst", DefaultTaskPollBurst, nil, nil},
			},
		},
		{
			name: "SQLTaskStoreOptions", prefix: "mcpstdio: ",
			zero: func() any { return SQLTaskStoreOptions{DB: new(sql.DB)} }, // never used: validation stops before any statement
			build: func(t *testing.T, opts any) (map[string]any, error) {
				o := opts.(SQLTaskStoreOptions)
				if err := validateSQLTaskStoreOptions(&o); err != nil {
					return nil, err
				}
				return map[string]any{"Limits.MaxTasks": o.Limits.MaxTasks, "Limits.MaxTasksPerOwner": o.Limits.MaxTasksPerOwner, "Limits.MaxBytes": o.Limits.MaxBytes,
					"Limits.MaxBytesPerOwner": o.Limits.MaxBytesPerOwner, "Lease": o.Lease, "PollInterval": o.PollInterval, "StatementTimeout": o.StatementTimeout, "Logger": o.Logger}, nil
			},
			fields: []optionField{
				{"Limits.MaxTasks", DefaultMaxTasks, nil, nil},
				{"Limits.MaxTasksPerOwner", DefaultMaxTasksPerOwner, nil, nil},
				{"Limits.MaxBytes", int64(DefaultMaxTaskBytes), nil, nil},
				{"Limits.MaxBytesPerOwner", int64(DefaultMaxTaskBytesOwner), nil, nil},
				{"Lease", DefaultSQLTaskLease, nil, nil},
				{"PollInterval", DefaultSQLTaskPollInterval, nil, nil},
				{"StatementTimeout", DefaultSQLStatementTimeout, nil, nil},
			},
		},
		{
			name: "JWTVerifierOptions", prefix: "mcpstdio: ",
			zero: func() any { return JWTVerifierOptions{Issuer: "https://as.example", Resource: testResource} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				v, err := NewJWTVerifier(opts.(JWTVerifierOptions))
				if err != nil {
					return nil, err
				}
				o := opts.(JWTVerifierOptions)
				if err := o.normalize(); err != nil { // what NewJWTVerifier did to build v
					t.Fatal(err)
				}
				return map[string]any{"ClockSkew": v.skew, "RefreshInterval": v.keys.minInterval, "MaxKeyAge": v.keys.maxAge,
					"FetchTimeout": o.FetchTimeout, "MaxResponseBytes": o.MaxResponseBytes, "Logger": v.keys.logger}, nil
			},
			fields: []optionField{
				{"ClockSkew", DefaultClockSkew, nil, nil},
				{"RefreshInterval", DefaultJWKSRefreshInterval, nil, nil},
				{"MaxKeyAge", DefaultJWKSMaxAge, nil, nil},
				{"FetchTimeout", DefaultIssuerFetchTimeout, nil, nil},
				{"MaxResponseBytes", DefaultIssuerMaxResponseBytes, nil, nil},
			},
		},
		{
			name: "IntrospectionVerifierOptions", prefix: "mcpstdio: ",
			zero: func() any {
				return IntrospectionVerifierOptions{Endpoint: "https://as.example/introspect", ClientID: "c", ClientSecret: "s", Issuer: "https://as.example", Resource: testResource}
			},
			build: func(t *testing.T, opts any) (map[string]any, error) {
				v, err := NewIntrospectionVerifier(opts.(IntrospectionVerifierOptions))
				if err != nil {
					return nil, err
				}
				return map[string]any{"CacheTTL": v.ttl, "MaxCacheEntries": v.cache.max, "MaxConcurrent": cap(v.slots), "ClockSkew": v.skew,
					"FetchTimeout": v.client.timeout, "MaxResponseBytes": int(v.client.maxBytes), "Logger": v.logger}, nil
			},
			fields: []optionField{
				{"CacheTTL", DefaultIntrospectionCacheTTL, nil, nil},
				{"MaxCacheEntries", DefaultIntrospectionCacheEntries, nil, nil},
				{"MaxConcurrent", DefaultMaxIntrospections, nil, nil},
				{"ClockSkew", DefaultClockSkew, nil, nil},
				{"FetchTimeout", DefaultIssuerFetchTimeout, nil, nil},
				{"MaxResponseBytes", DefaultIssuerMaxResponseBytes, nil, nil},
			},
		},
		{
			name: "TelemetryOptions", prefix: "mcpstdio: ",
			zero: func() any { return TelemetryOptions{} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				tel, err := NewTelemetry(opts.(TelemetryOptions))
				if err != nil {
					return nil, err
				}
				defer tel.Shutdown(context.Background())
				o := tel.opts
				return map[string]any{"Timeout": o.Timeout, "SampleRatio": o.SampleRatio, "MaxQueue": o.MaxQueue, "MaxExportBatch": o.MaxExportBatch,
					"BatchDelay": o.BatchDelay, "MetricInterval": o.MetricInterval, "Logger": o.Logger}, nil
			},
			fields: []optionField{
				{"Timeout", defaultTelemetryTimeout, nil, nil},
				{"SampleRatio", 1.0, nil, float64(None)},
				{"MaxQueue", defaultTelemetryMaxQueue, nil, nil},
				{"MaxExportBatch", defaultTelemetryExportBatch, nil, nil},
				{"BatchDelay", defaultTelemetryBatchDelay, nil, nil},
				{"MetricInterval", defaultTelemetryMetricPeriod, nil, nil},
			},
		},
		{
			name: "AuthOptions", prefix: "mcpstdio: ",
			zero: func() any {
				return AuthOptions{Resource: testResource, AuthorizationServers: []string{"https://as.example.test"}, Verifier: testPrincipals}
			},
			build: func(t *testing.T, opts any) (map[string]any, error) {
				o := opts.(AuthOptions)
				_, err := newAuthGate(&o, nil)
				return map[string]any{}, err
			},
		},
		{
			// Its errors name it where it is set, HTTPOptions.Auth.DPoP.
			name: "DPoPOptions", as: "HTTPOptions.Auth.DPoP", prefix: "mcpstdio: ",
			zero: func() any { return DPoPOptions{Mode: DPoPAllow} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				resource, err := parseResourceURI(testResource)
				if err != nil {
					t.Fatal(err)
				}
				g, err := newDPoPGate(opts.(DPoPOptions), resource, nil)
				if err != nil {
					return nil, err
				}
				return map[string]any{"ProofWindow": g.window, "MaxProofs": g.ledger.max, "MaxClientProofs": g.ledger.perClient}, nil
			},
			fields: []optionField{
				{"ProofWindow", DefaultDPoPProofWindow, nil, nil},
				{"MaxProofs", DefaultDPoPMaxProofs, nil, nil},
				// 0, the default: a quarter of MaxProofs; Unlimited: all.
				{"MaxClientProofs", DefaultDPoPMaxProofs / 4, DefaultDPoPMaxProofs, nil},
			},
		},
		{
			name: "SkillsOptions", prefix: "mcpstdio: ",
			zero: func() any { return SkillsOptions{} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				_, err := newTestRuntime(t, RuntimeOptions{ServerInfo: info}).AddSkills(fstest.MapFS{}, opts.(SkillsOptions))
				return map[string]any{}, err
			},
		},
		{
			name: "ToolExecution", prefix: `adding tool "t": `,
			zero: func() any { return ToolExecution{TaskSupport: TaskOptional} },
			build: func(t *testing.T, opts any) (map[string]any, error) {
				rt := newTestRuntime(t, RuntimeOptions{ServerInfo: info, Tasks: TaskOptions{}})
				e := opts.(ToolExecution)
				if err := rt.AddTool(Tool{Name: "t", Execution: &e}, func(context.Context, *HandlerRequest) (*ToolResult, error) { return nil, nil }); err != nil {
					return nil, err
				}
				return map[string]any{"TaskAfter": rt.cat.tools.byKey["t"].tool.Execution.TaskAfter}, nil
			},
			// 0, the default, makes a call a task at once; Unlimited,
			// only when its handler calls StartTask.
			fields: []optionField{{"TaskAfter", time.Duration(0), time.Duration(Unlimited), nil}},
		},
	}
}

// requestDeadline is the deadline of a request a transport submits with
// timeout to e: the executor's when timeout is 0.
func requestDeadline(timeout time.Duration, e *Executor) time.Duration {
	if timeout == 0 {
		return e.timeout
	}
	return timeout
}

// TestOptionsRule checks the rule of every numeric field of every options
// struct (see Unlimited): 0 gives its default; Unlimited and None give
// their meaning where the field takes them and are refused elsewhere; any
// other negative value is refused with an error naming the field and the
// value. Every numeric field must be listed, so that a field added without
// thought for the rule fails here; and a nil Logger means slog.Default().
func TestOptionsRule(t *testing.T) {
	for _, s := range optionsStructs() {
		t.Run(s.name, func(t *testing.T) {
			var listed []string
			for _, f := range s.fields {
				listed = append(listed, f.name)
			}
			if found := numericFields(reflect.TypeOf(s.zero()), ""); !slices.Equal(found, listed) {
				t.Fatalf("numeric fields %v, listed %v: list each field, in order, with what 0, Unlimited and None give it", found, listed)
			}
			eff, err := s.build(t, s.zero())
			if err != nil {
				t.Fatalf("zero options: %v", err)
			}
			if _, ok := reflect.TypeOf(s.zero()).FieldByName("Logger"); ok && eff["Logger"] != slog.Default() {
				t.Errorf("a nil Logger gave %v, want slog.Default()", eff["Logger"])
			}
			for _, f := range s.fields {
				if eff[f.name] != f.def {
					t.Errorf("%s 0: %v (%T), want the default %v (%T)", f.name, eff[f.name], eff[f.name], f.def, f.def)
				}
				for _, c := range []struct {
					value float64
					want  any
				}{{Unlimited, f.unlimited}, {None, f.none}, {-3, nil}} {
					opts := s.zero()
					v := reflect.ValueOf(&opts).Elem()
					copied := reflect.New(v.Elem().Type()).Elem()
					copied.Set(v.Elem())
					setOptionNumber(copied.FieldByIndex(fieldIndex(copied.Type(), f.name)), c.value)
					eff, err := s.build(t, copied.Interface())
					field := cmp.Or(s.as, s.name) + "." + f.name
					switch {
					case c.want != nil && err != nil:
						t.Errorf("%s %v: %v, want it taken", field, c.value, err)
					case c.want != nil && eff[f.name] != c.want:
						t.Errorf("%s %v: %v, want %v", field, c.value, eff[f.name], c.want)
					case c.want == nil && err == nil:
						t.Errorf("%s %v was taken (%v)", field, c.value, eff[f.name])
					case c.want == nil:
						checkRefusal(t, s.prefix+field, copied.FieldByIndex(fieldIndex(copied.Type(), f.name)).Interface(), f, err)
					}
				}
			}
		})
	}
}

// TestOptionsRuleListsEveryOptionsStruct: every exported struct of the
// library named ...Options is in optionsStructs, so that TestOptionsRule
// checks a new one too.
func TestOptionsRuleListsEveryOptionsStruct(t *testing.T) {
	fset := token.NewFileSet()
	listed := map[string]bool{}
	for _, s := range optionsStructs() {
		listed[s.name] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "main") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && strings.HasSuffix(ts.Name.Name, "Options") && !listed[ts.Name.Name] {
					t.Errorf("%s (%s) is not in optionsStructs: add it, with what 0, Unlimited and None give each of its numeric fields", ts.Name.Name, name)
				}
			}
		}
	}
}

// checkRefusal checks the error refusing value of field f: the rule's
// message, "PREFIX.Field must be >= 0[, and <= C][ or Unlimited]..., got V",
// which offers exactly the spellings f takes.
func checkRefusal(t *testing.T, field string, value any, f optionField, err error) {
	t.Helper()
	msg := regexp.MustCompile(`^` + regexp.QuoteMeta(field) + ` must be >= 0( and <= [^ ,]+)?(, Unlimited or None| or Unlimited| or None)?, got ` + regexp.QuoteMeta(fmt.Sprint(value)) + `$`)
	m := msg.FindStringSubmatch(err.Error())
	if m == nil {
		t.Errorf("%s %v: %q, want %q", field, value, err, msg)
		return
	}
	var want string
	switch {
	case f.unlimited != nil && f.none != nil:
		want = ", Unlimited or None"
	case f.unlimited != nil:
		want = " or Unlimited"
	case f.none != nil:
		want = " or None"
	}
	if m[2] != want {
		t.Errorf("%s: %q offers %q, want %q", field, err, m[2], want)
	}
}

// numericFields lists the paths of the numeric fields of struct type typ,
// those of its struct fields included (an embedded struct's as promoted)
// but for those of another options struct, which has an entry of its own.
func numericFields(typ reflect.Type, prefix string) []string {
	var names []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Float64:
			if f.Type.PkgPath() != typ.PkgPath() { // not an enum of the package's, such as DPoPMode
				names = append(names, prefix+f.Name)
			}
		case reflect.Struct:
			// The package's own, not a time.Time; an options struct
			// inside another (AuthOptions.DPoP) is checked on its own.
			if f.Type.PkgPath() == typ.PkgPath() && !strings.HasSuffix(f.Type.Name(), "Options") {
				if f.Anonymous {
					names = append(names, numericFields(f.Type, prefix)...)
				} else {
					names = append(names, numericFields(f.Type, prefix+f.Name+".")...)
				}
			}
		}
	}
	return names
}

// fieldIndex is the index of the field at path in typ.
func fieldIndex(typ reflect.Type, path string) []int {
	var index []int
	for name := range strings.SplitSeq(path, ".") {
		f, _ := typ.FieldByName(name)
		index = append(index, f.Index...)
		typ = f.Type
	}
	return index
}

// setOptionNumber sets v, an int, int64 or float64 field, to n.
func setOptionNumber(v reflect.Value, n float64) {
	if v.Kind() == reflect.Float64 {
		v.SetFloat(n)
		return
	}
	v.SetInt(int64(n))
}
