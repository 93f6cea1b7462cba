// Command mcpstdio serves a reference MCP server on standard input and
// output, or with -http over Streamable HTTP: every protocol version from
// 2024-11-05 to 2026-07-28, and a catalog of tools, resources and prompts
// (echo, sleep, and the fixtures of the official conformance suite). Run it
// with -h for its flags. It exits 0 after the end of its input and, with
// -http, after a signal and the drain; 1 after an output failure, a fatal
// error or, on stdio, a signal; 2 for bad flags.
//
// The command is this file and the main_*.go files: the reference catalog,
// the HTTP wiring, the processors on stdio. doc.go describes the library the
// command is built on.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const serverVersion = "0.1.0"

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// config is what the command line says.
type config struct {
	writeTimeout, requestTimeout, notifyEvery time.Duration
	maxLineBytes, maxConcurrency, maxQueue    int
	procs                                     int // -procs; 0: automatic (main_procs.go)
	maxSubscriptions, maxInflightBytes        int
	notificationMethods, protocols            []string
	logLevel                                  slog.Level
	cpuProfile, memProfile                    string
	stateKey                                  []byte // nil: a random key per process
	httpAddr, httpAddrFile                    string
	allowedHosts, allowedOrigins              []string
	keepAlive                                 time.Duration
	pageSize                                  int
	auth                                      authFlags      // main_auth.go
	telemetry                                 telemetryFlags // main_telemetry.go
	tasks                                     TaskOptions    // the tasks extension's bounds
	skills                                    skillsFlags    // main_skills.go
	store                                     taskStoreFlags // main_taskstore.go
	maxConnections, maxHeaderBytes            int
	http                                      httpBoundFlags // main_http.go
	// Each client's share of the executor with -http (0: the whole,
	// work-conserving), and of the sessions (0: a quarter).
	maxClientConcurrency, maxClientQueue, maxClientInflightBytes, maxClientSessions int
	trustedProxies                                                                  []netip.Prefix // -http-trusted-proxies
}

// flagText is what the flags whose values parseFlags checks and converts
// hold as written.
type flagText struct {
	methods, protocols, level, stateKeyFile, hosts, origins string
}

// parseFlags parses args; the error has been reported on stderr already.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	var text flagText
	fs := newFlagSet(&c, &text, stderr)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c.check(fs, text, stderr)
}

// newFlagSet defines the command's flags on a new flag set that writes its
// messages to stderr: the flags set c, or text where parseFlags converts
// them.
func newFlagSet(c *config, text *flagText, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpstdio", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printUsage(fs) }
	optionVar(fs, &c.writeTimeout, "write-timeout", DefaultWriteTimeout, "how long the client may take none of a frame of an answer (on stdout, or with -http of a response); then the connection (the response) ends")
	optionVar(fs, &c.maxLineBytes, "max-line-bytes", DefaultMaxLineBytes, "limit of one input line, counting its newline")
	optionVar(fs, &c.requestTimeout, "request-timeout", defaultJobTimeout, "deadline of each request from when it starts running (unlimited: no deadline)", Unlimited)
	optionVar(fs, &c.maxConcurrency, "max-concurrency", defaultMaxConcurrency, "requests running at once")
	optionVar(fs, &c.maxQueue, "max-queue", defaultMaxQueue, "requests waiting for a worker (unlimited: as many as -max-inflight-bytes admits; none: no request waits, one that finds every worker busy is refused)", Unlimited, None)
	optionVar(fs, &c.maxInflightBytes, "max-inflight-bytes", DefaultMaxInflightBytes, "total size of the input lines of the requests running or waiting; also sets the soft memory limit unless GOMEMLIMIT is set (unlimited: no bound, and no memory limit)", Unlimited)
	optionVar(fs, &c.maxSubscriptions, "max-subscriptions", DefaultMaxSubscriptions, "subscriptions per connection: open subscriptions/listen streams and resources/subscribe URIs together")
	fs.StringVar(&text.methods, "notification-methods", "", "comma-separated notification methods the application may send")
	optionVar(fs, &c.notifyEvery, "notify-every", 0, "when set, send the first allowed application notification on this period")
	fs.StringVar(&text.protocols, "protocols", strings.Join(defaultProtocolVersions(), ","), "enabled protocol versions, in preference order")
	fs.StringVar(&text.level, "log-level", "info", "stderr diagnostics level: debug, info, warn, error")
	fs.StringVar(&text.stateKeyFile, "state-key-file", "", "`FILE` holding the secret that signs pagination cursors and requestStates, so that replicas given the same file accept each other's "+
		"(at least 32 bytes once trailing whitespace is trimmed; a file of random bytes works, e.g. head -c 32 /dev/urandom | base64 > key); default: a random key per process")
	optionVar(fs, &c.pageSize, "page-size", defaultPageSize, "items per page of tools/list, prompts/list, resources/list and resources/templates/list")
	optionVar(fs, &c.procs, "procs", 0, "processors the server runs on (GOMAXPROCS; stdio and -http); 0: on stdio one while no handler runs on a worker and the runtime's default while one does, with -http the runtime's default (a GOMAXPROCS environment variable is kept)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the session (stdio or -http) to this file")
	fs.StringVar(&c.memProfile, "memprofile", "", "write a heap profile to this file at the end of the session (stdio or -http)")
	fs.StringVar(&c.httpAddr, "http", "", "serve Streamable HTTP on this address (e.g. :8080, which binds 127.0.0.1) instead of stdio")
	fs.StringVar(&c.httpAddrFile, "http-addr-file", "", "with -http, write the bound host:port to this file once listening")
	fs.StringVar(&text.hosts, "http-allowed-hosts", "", "with -http, comma-separated Host header values accepted besides loopback names and the -http host")
	fs.StringVar(&text.origins, "http-allowed-origins", "", "with -http, comma-separated Origin values (scheme://host[:port]) accepted besides loopback origins")
	optionVar(fs, &c.keepAlive, "http-keep-alive", DefaultKeepAlive, "with -http, period of keep-alive comments on long-lived SSE streams")
	c.auth.register(fs)
	c.skills.register(fs)
	c.telemetry.register(fs)
	optionVar(fs, &c.tasks.MaxTasks, "max-tasks", DefaultMaxTasks, "tasks kept at once, running or finished (the tasks extension)")
	optionVar(fs, &c.tasks.MaxTasksPerOwner, "max-tasks-per-owner", DefaultMaxTasksPerOwner, "tasks kept at once for one connection or HTTP session")
	optionVar(fs, &c.tasks.MaxBytes, "max-task-bytes", DefaultMaxTaskBytes, "bytes of results, questions, answers and running tasks' requests kept by all tasks")
	optionVar(fs, &c.tasks.MaxBytesPerOwner, "max-task-bytes-per-owner", DefaultMaxTaskBytesOwner, "the same, for the tasks of one connection or HTTP session")
	optionVar(fs, &c.tasks.TTL, "task-ttl", DefaultTaskTTL, "how long a task is kept from its creation (ttlMs); its work is cancelled then")
	optionVar(fs, &c.tasks.PollInterval, "task-poll-interval", DefaultTaskPollInterval, "the pollIntervalMs suggested to clients; faster tasks/get polls are refused beyond -task-poll-burst")
	optionVar(fs, &c.tasks.PollBurst, "task-poll-burst", DefaultTaskPollBurst, "tasks/get polls of one task answered in a row faster than -task-poll-interval")
	c.store.register(fs)
	optionVar(fs, &c.maxConnections, "http-max-connections", DefaultMaxConnections, "with -http, connections served at once; at the cap the longest-idle keep-alive connection is closed for a new one, else it waits to be accepted")
	optionVar(fs, &c.maxHeaderBytes, "http-max-header-bytes", DefaultMaxHeaderBytes, "with -http, limit of a request's header lines (431 beyond)")
	optionVar(fs, &c.maxClientConcurrency, "max-client-concurrency", 0, "with -http, requests one client (a principal, a session, or the stateless requests of one address) runs at once while others wait for a worker; alone it may use every worker (0: all of -max-concurrency)")
	optionVar(fs, &c.maxClientQueue, "max-client-queue", 0, "with -http, requests one client may queue while another client has one queued; alone it may fill the queue (0: all of -max-queue)")
	optionVar(fs, &c.maxClientInflightBytes, "max-client-inflight-bytes", 0, "with -http, bytes one client may hold while another client holds some; alone it may use the whole budget (0: all of -max-inflight-bytes)")
	fs.Func("http-trusted-proxies", "with -http, comma-separated CIDR prefixes (or addresses) of the reverse proxies whose Forwarded / X-Forwarded-For client address is believed (default none)", func(v string) error {
		p, err := parseTrustedProxies(v)
		c.trustedProxies = p
		return err
	})
	optionVar(fs, &c.maxClientSessions, "max-client-sessions", 0, "with -http, sessions one client may hold by taking the places of other clients' idle sessions at the cap of -http-max-sessions; alone it may create them all (0: all of them)")
	c.http.register(fs)
	return fs
}

// check validates c, parsed by fs, converts text into it, and returns it;
// an error is reported on stderr.
func (c config) check(fs *flag.FlagSet, text flagText, stderr io.Writer) (config, error) {
	fail := func(format string, a ...any) (config, error) {
		err := fmt.Errorf(format, a...)
		fmt.Fprintln(stderr, "mcpstdio:", err)
		return c, err
	}
	if fs.NArg() > 0 {
		return fail("unexpected arguments: %q", fs.Args())
	}
	if err := c.logLevel.UnmarshalText([]byte(text.level)); err != nil {
		return fail("-log-level: %v", err)
	}
	c.notificationMethods = splitList(text.methods)
	c.protocols = splitList(text.protocols)
	if err := validateVersions(c.protocols); err != nil {
		return fail("-protocols: %v", err)
	}
	c.allowedHosts, c.allowedOrigins = splitList(text.hosts), splitList(text.origins)
	if c.notifyEvery > 0 && len(c.notificationMethods) == 0 {
		return fail("-notify-every needs -notification-methods")
	}
	if c.httpAddr == "" {
		var httpOnly []string
		fs.Visit(func(f *flag.Flag) {
			if strings.HasPrefix(f.Name, "max-client-") {
				httpOnly = append(httpOnly, "-"+f.Name)
			}
		})
		if len(httpOnly) > 0 {
			return fail("%s: apply with -http only (stdio has one client, which may use the whole executor)", strings.Join(httpOnly, ", "))
		}
	}
	c.fillCommandDefaults()
	if err := c.store.check(); err != nil {
		return fail("%v", err)
	}
	if err := c.auth.check(c.httpAddr != ""); err != nil {
		return fail("%v", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := c.skills.check(set); err != nil {
		return fail("%v", err)
	}
	if text.stateKeyFile != "" {
		key, err := readStateKey(text.stateKeyFile)
		if err != nil {
			return fail("-state-key-file: %v", err)
		}
		c.stateKey = key
	}
	return c, nil
}

// fillCommandDefaults replaces the 0 of the flags whose values the command
// uses itself (not only passes to an option, which defaults its own 0) by
// their defaults.
func (c *config) fillCommandDefaults() {
	defaultTo(&c.writeTimeout, DefaultWriteTimeout)
	defaultTo(&c.maxLineBytes, DefaultMaxLineBytes)
	defaultTo(&c.maxHeaderBytes, DefaultMaxHeaderBytes)
	defaultTo(&c.http.maxBodyBytes, DefaultMaxBodyBytes)
	defaultTo(&c.skills.rescan, defaultSkillsRescan)
}

// readStateKey returns the secret in file: its bytes without trailing ASCII
// whitespace (so a key written by echo or base64 keeps no newline), which
// must be at least minStateKeyBytes long.
func readStateKey(file string) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	key := bytes.TrimRight(data, " \t\r\n\v\f")
	if len(key) < minStateKeyBytes {
		return nil, fmt.Errorf("%s holds %d bytes once trailing whitespace is trimmed, want at least %d", file, len(key), minStateKeyBytes)
	}
	return key, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// run is the whole command; it returns the exit status: 0 after end of input
// and drain, 1 after an output failure or a fatal error, 2 for bad flags.
func run(args []string, stderr *os.File) int {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	if c.procs > 0 {
		runtime.GOMAXPROCS(c.procs)
	}
	logger := slog.New(TraceLogHandler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: c.logLevel})))
	store, closeStore, err := c.store.open(c.tasks.TaskLimits, logger)
	if err != nil {
		logger.Error("mcpstdio: opening the task store failed", "err", err)
		return 1
	}
	defer closeStore()
	c.tasks.Store = store
	rt, err := NewRuntime(RuntimeOptions{
		ServerInfo:       Implementation{Name: "mcpstdio", Title: "mcpstdio reference server", Version: serverVersion},
		ProtocolVersions: c.protocols,
		Logging:          true,
		// The reference server announces list changes and resource updates.
		ToolsListChanged:     true,
		PromptsListChanged:   true,
		ResourcesListChanged: true,
		ResourcesSubscribe:   true,
		StateKey:             c.stateKey,
		PageSize:             c.pageSize,
		Tasks:                c.tasks,
		Logger:               logger,
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if err := registerReferenceCatalog(rt); err != nil {
		logger.Error("mcpstdio: building the catalog failed", "err", err)
		return 1
	}
	stopSkills, err := c.skills.start(rt, logger)
	if err != nil {
		logger.Error("mcpstdio: serving skills failed", "err", err)
		return 1
	}
	defer stopSkills()
	stopProfile, err := startProfiles(c)
	if err != nil {
		logger.Error("mcpstdio: profiling", "err", err)
		return 1
	}
	defer stopProfile()
	tel, err := startTelemetry(c.telemetry, rt, logger, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "mcpstdio:", err)
		return 2
	}
	defer tel.stop(logger)
	if c.httpAddr != "" {
		return serveHTTP(c, rt, logger, stderr, tel)
	}
	// The signal handler is installed before Serve changes stdin's and
	// stdout's mode and removed after Serve restored them, so that SIGINT
	// or SIGTERM cannot end the process in between.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := c.stdioOptions()
	opts.Logger, opts.Observer = logger, tel.observer()
	if procs := stdioProcs(c.procs); procs != nil {
		// The governor is told when the executor's workers are busy: the
		// command makes the executor the transport would have made, and
		// closes it after Serve.
		exec, err := newExecutor(opts.executorOptions(), procs.busy)
		if err != nil {
			fmt.Fprintln(stderr, "mcpstdio:", err)
			return 2
		}
		defer exec.Close()
		opts.Executor, opts.MaxConcurrency, opts.MaxQueue, opts.MaxInflightBytes = exec, 0, 0, 0
		governed := make(chan struct{})
		defer close(governed)
		go procs.run(governed)
	}
	tr, err := NewStdioTransport(rt, opts)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if tel.t != nil {
		tel.t.ObserveTransport(tr)
	}
	setMemoryLimit(memoryLimit(c), logger)
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		fmt.Fprintln(stderr, "mcpstdio: serving MCP as newline-delimited JSON-RPC on stdin/stdout; type a request, or press Ctrl-D to end")
	}
	if c.notifyEvery > 0 {
		go heartbeat(ctx, tr, c.notificationMethods[0], c.notifyEvery, logger)
	}
	err = tr.Serve(ctx)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled):
		logger.Info("mcpstdio: stopped by signal")
		return 1
	default:
		logger.Error("mcpstdio: serving ended", "err", err)
		return 1
	}
}

// stdioOptions are the transport's options the flags set.
func (c *config) stdioOptions() Options {
	return Options{
		WriteTimeout:        c.writeTimeout,
		MaxLineBytes:        c.maxLineBytes,
		RequestTimeout:      c.requestTimeout,
		MaxSubscriptions:    c.maxSubscriptions,
		NotificationMethods: c.notificationMethods,
		MaxConcurrency:      c.maxConcurrency,
		MaxQueue:            c.maxQueue,
		MaxInflightBytes:    c.maxInflightBytes,
	}
}

// memoryLimit is the soft memory limit of the process (runtime/debug), on
// stdio and with -http: the input admitted and the answers kept for their
// write (-max-inflight-bytes: lines or POST bodies, and over HTTP their
// answers, which are admitted against the same budget) plus room for what
// else is held, which is mostly messages too (four of the largest: a line,
// with -http a POST body): lines read ahead or held behind an initialize,
// the one being assembled, refused ones not yet collected, and what
// handlers hold until their answer is admitted (the arguments they
// decoded, the answer being built). It keeps the collector from letting the
// heap grow to twice what is live (GOGC=100) when the input is large.
//
// With -max-inflight-bytes unlimited there is no soft memory limit:
// memoryLimit returns math.MaxInt64, the runtime's own "none".
func memoryLimit(c config) int64 {
	budget := c.maxInflightBytes
	switch budget {
	case Unlimited:
		return math.MaxInt64
	case 0:
		budget = DefaultMaxInflightBytes
	}
	message := c.maxLineBytes
	if c.httpAddr != "" {
		message = c.http.maxBodyBytes
	}
	return int64(budget) + 4*int64(message) + 16<<20
}

// setMemoryLimit sets the soft memory limit to limit unless GOMEMLIMIT is
// set, and logs the limit in effect (at debug level). The collector's
// target stays Go's (GOGC, 100 by default): at 400 a stdio echo at window
// 64 took about a quarter more CPU per call, and one call at a time a
// third more time, than at 100 (bench/limits' interleaved pairs; its
// larger heap walks through more fresh memory between collections).
func setMemoryLimit(limit int64, logger *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
	logger.Debug("mcpstdio: soft memory limit", "bytes", debug.SetMemoryLimit(-1))
}

// httpGCPercent is the collector's target with -http unless GOGC is set.
// A call over HTTP leaves about 6 KB of garbage (net/http's request and
// response, the POST's record) on a live heap of a few MiB, so at Go's 100
// the collector ran about 55 cycles a second from 16 clients, and each
// cycle's fixed cost (waking its workers, scanning every connection's
// stack, shrinking the stacks that then grow again) was a tenth of the CPU
// of a call. At 200, in bench/limits' interleaved pairs against rawhttp, a
// call took 34.5 µs of CPU instead of 38.7 from 16 clients in 2026-07-28
// and 42.5 instead of 46.8 in sessions, one client's median latency did not
// change, and the soft memory limit still bounds the heap. Stdio keeps Go's
// target (see setMemoryLimit).
const httpGCPercent = 200

// setGCPercent sets the collector's target to percent unless GOGC is set,
// and logs the target in effect (at debug level): percent, or GOGC as set.
func setGCPercent(percent int, logger *slog.Logger) {
	gogc := os.Getenv("GOGC")
	if gogc == "" {
		debug.SetGCPercent(percent)
		gogc = strconv.Itoa(percent)
	}
	logger.Debug("mcpstdio: collector target", "gogc", gogc)
}

// heartbeat sends method on tr every period until ctx ends or the transport
// closes.
func heartbeat(ctx context.Context, tr *Transport, method string, period time.Duration, logger *slog.Logger) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for seq := 1; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := tr.Notify(ctx, method, map[string]any{"sequence": seq, "time": time.Now().UTC().Format(time.RFC3339Nano)})
		switch {
		case errors.Is(err, ErrClosed), errors.Is(err, ErrTransportDown), errors.Is(err, ErrOutputFailed):
			return
		case err != nil:
			logger.Warn("mcpstdio: heartbeat", "err", err)
		}
	}
}

// startProfiles starts the profiles the flags ask for and returns the function
// that finishes them.
func startProfiles(c config) (stop func(), err error) {
	var cpu *os.File
	if c.cpuProfile != "" {
		if cpu, err = os.Create(c.cpuProfile); err != nil {
			return nil, err
		}
		if err = pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, err
		}
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if c.memProfile != "" {
			f, err := os.Create(c.memProfile)
			if err != nil {
				return
			}
			runtime.GC()
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}, nil
}
