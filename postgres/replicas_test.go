package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestReplicas runs the command three times on one PostgreSQL database
// behind HAProxy with the configuration of docs/how-to/deploy.md
// (testdata/haproxy-replicas/haproxy.cfg), and walks the scenarios of a
// deployment: a task read through every replica, answered and cancelled
// through another than its runner's, a thousand created at once, a replica
// restarted, one killed mid-task. It logs the measurements ("measure:").
// It needs MCPSTDIO_TEST_DSN and haproxy (.ci/replicas provides both).
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers and HAProxy")
	}
	set := startReplicaSet(t)
	ctx := context.Background()

	t.Run("created via A, read via B and C", func(t *testing.T) {
		id := set.createTask(t, set.url(0), "slow_compute", `{"seconds":0.3}`)
		for _, r := range []int{1, 2} {
			if w := set.getTask(t, set.url(r), id); w.TaskID != id {
				t.Fatalf("tasks/get via %s = %+v", set.name(r), w)
			}
		}
		set.awaitRow(t, id, "completed", func(r observedRow) bool { return r.status == TaskCompleted })
		for _, r := range []int{1, 2} {
			w := set.getTask(t, set.url(r), id)
			if w.Status != TaskCompleted || !strings.Contains(string(w.Result), "Computed result in 0.3s") {
				t.Fatalf("tasks/get via %s of the completed task = %+v (%s)", set.name(r), w, w.Result)
			}
		}
	})

	t.Run("input_required answered via C", func(t *testing.T) {
		id := set.createTask(t, set.url(0), "confirm_delete", `{"filename":"a.txt"}`)
		set.awaitRow(t, id, "input_required", func(r observedRow) bool { return r.status == TaskInputRequired })
		w := set.getTask(t, set.url(1), id)
		if w.Status != TaskInputRequired || w.InputRequests["confirm"].Method != MethodElicit {
			t.Fatalf("tasks/get via B = %+v, want the confirm question", w)
		}
		set.mustCall(t, set.url(2), "tasks/update", id, `{"taskId":"`+id+`","inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}}`)
		set.awaitRow(t, id, "completed", func(r observedRow) bool { return r.status == TaskCompleted })
		if w := set.getTask(t, set.url(0), id); !strings.Contains(string(w.Result), "Deleted a.txt") {
			t.Fatalf("the answered task ended %+v (%s), want Deleted a.txt", w, w.Result)
		}
	})

	t.Run("running on A, cancelled via B", func(t *testing.T) {
		id := set.createTask(t, set.url(0), "slow_compute", `{"seconds":60}`)
		set.awaitRow(t, id, "running as a task", func(r observedRow) bool { return r.held > 0 })
		start := time.Now()
		set.mustCall(t, set.url(1), "tasks/cancel", id, `{"taskId":"`+id+`"}`)
		acked := time.Since(start)
		// The handler on A returned when its task gave back the bytes its
		// request held (complete, after the handler's context ended).
		set.awaitRow(t, id, "its handler on A stopped", func(r observedRow) bool { return r.status == TaskCancelled && r.held == 0 })
		t.Logf("measure: cancel via B acknowledged in %v; the handler on A stopped %v after the request was sent", acked.Round(time.Microsecond), time.Since(start).Round(time.Microsecond))
		if w := set.getTask(t, set.url(2), id); w.Status != TaskCancelled {
			t.Fatalf("tasks/get via C = %s, want cancelled", w.Status)
		}
	})

	t.Run("status change on A reaches a listener on C", func(t *testing.T) {
		id := set.createTask(t, set.url(0), "slow_compute", `{"seconds":60}`)
		frames := set.listen(t, set.url(2), id)
		waitForFrame(t, frames, "notifications/subscriptions/acknowledged", id)
		start := time.Now()
		set.mustCall(t, set.url(1), "tasks/cancel", id, `{"taskId":"`+id+`"}`)
		frame := waitForFrame(t, frames, `"method":"notifications/tasks"`, `"status":"cancelled"`)
		t.Logf("measure: the cancel via B reached the listen stream on C %v after it was sent", time.Since(start).Round(time.Microsecond))
		if !strings.Contains(frame, `"taskId":"`+id+`"`) {
			t.Fatalf("notifications/tasks frame %s, want task %s", frame, id)
		}
	})

	t.Run("1000 concurrent creations", func(t *testing.T) {
		const n = 1000
		ids := make([]string, n)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range n {
			wg.Go(func() {
				id, err := set.tryCreateTask(set.proxy, "confirm_delete", `{"filename":"f`+fmt.Sprint(i)+`"}`)
				ids[i] = id
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		close(errs)
		for err := range errs {
			t.Fatalf("a creation failed: %v", err)
		}
		t.Logf("measure: %d concurrent task creations through HAProxy in %v: %.0f/s", n, elapsed.Round(time.Millisecond), n/elapsed.Seconds())
		unique := slices.Compact(slices.Sorted(slices.Values(ids)))
		if len(unique) != n {
			t.Fatalf("%d distinct IDs of %d creations", len(unique), n)
		}
		var stored int
		if err := set.db.QueryRow(ctx, `SELECT COUNT(*) FROM `+set.table+` WHERE id = ANY($1)`, ids).Scan(&stored); err != nil || stored != n {
			t.Fatalf("%d of the %d tasks stored (%v)", stored, n, err)
		}
		// Each is readable everywhere: through each replica directly, and
		// through the proxy (timed).
		for r := range 3 {
			set.parallel(t, ids, func(id string) error { return set.checkReadable(set.url(r), id) })
		}
		latencies := make([]time.Duration, 0, n)
		for _, id := range ids {
			t0 := time.Now()
			if err := set.checkReadable(set.proxy, id); err != nil {
				t.Fatal(err)
			}
			latencies = append(latencies, time.Since(t0))
		}
		slices.Sort(latencies)
		t.Logf("measure: tasks/get through HAProxy, %d sequential: p50 %v, p90 %v, p99 %v", n,
			latencies[n/2].Round(time.Microsecond), latencies[n*9/10].Round(time.Microsecond), latencies[n*99/100].Round(time.Microsecond))
	})

	t.Run("restarted replica keeps its finished tasks readable", func(t *testing.T) {
		id := set.createTask(t, set.url(1), "slow_compute", `{"seconds":0.2}`)
		set.awaitRow(t, id, "completed", func(r observedRow) bool { return r.status == TaskCompleted && r.held == 0 })
		set.stop(1, syscall.SIGTERM)
		set.start(1)
		if w := set.getTask(t, set.url(1), id); w.Status != TaskCompleted || !strings.Contains(string(w.Result), "Computed result") {
			t.Fatalf("tasks/get via the restarted B = %+v (%s)", w, w.Result)
		}
	})

	t.Run("kill -9 of A mid-task", func(t *testing.T) {
		running := set.createTask(t, set.url(0), "slow_compute", `{"seconds":60}`)
		asking := set.createTask(t, set.url(0), "confirm_delete", `{"filename":"b.txt"}`)
		set.awaitRow(t, running, "running", func(r observedRow) bool { return r.held > 0 })
		set.awaitRow(t, asking, "input_required", func(r observedRow) bool { return r.status == TaskInputRequired })
		down := set.proxyLog.seen("Server replicas/a is DOWN")
		killed := time.Now()
		set.stop(0, syscall.SIGKILL)
		for _, id := range []string{running, asking} {
			set.awaitRow(t, id, "failed", func(r observedRow) bool { return r.status == TaskFailed })
		}
		t.Logf("measure: A's tasks failed %v after kill -9 (lease %v)", time.Since(killed).Round(time.Millisecond), replicaLease)
		for _, id := range []string{running, asking} {
			w := set.getTask(t, set.proxy, id)
			if w.Status != TaskFailed || w.Error == nil || !strings.Contains(w.StatusMessage, "stopped: its lease expired") {
				t.Fatalf("tasks/get through the proxy = %+v, want failed saying A's lease expired", w)
			}
		}
		// The health checks take A out (three failed checks a second
		// apart), so the proxy stops sending it requests.
		select {
		case <-down:
			t.Logf("measure: HAProxy's health checks had taken A out by %v after kill -9", time.Since(killed).Round(time.Millisecond))
		case <-time.After(30 * time.Second):
			t.Fatalf("HAProxy did not report A down; its output:\n%s", set.proxyLog.String())
		}
		// B and C serve on, through the proxy too (a request sent to the
		// dead A is redispatched).
		for range 6 {
			id := set.createTask(t, set.proxy, "slow_compute", `{"seconds":0.5}`)
			if w := set.getTask(t, set.proxy, id); w.TaskID != id {
				t.Fatalf("tasks/get = %+v", w)
			}
		}
	})

	// An initialize-era session lives in the memory of the replica that
	// answered its initialize: the proxy's stick table sends every later
	// request of the session there (round-robin would send two of three
	// elsewhere, which answer 404). When that replica dies, the session is
	// gone: its next request is cut or answered 404 by another replica, and a
	// new initialize starts a new session (docs/how-to/deploy.md).
	t.Run("a session pinned to its replica, and gone with it", func(t *testing.T) {
		const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
		status, sid := set.sessionPost(t, set.proxy, "", sessionInitialize)
		if status != http.StatusOK || sid == "" {
			t.Fatalf("initialize through the proxy: HTTP %d, session %q", status, sid)
		}
		if status, _ := set.sessionPost(t, set.proxy, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
			t.Fatalf("notifications/initialized: HTTP %d", status)
		}
		for i := range 9 {
			if status, _ := set.sessionPost(t, set.proxy, sid, ping); status != http.StatusOK {
				t.Fatalf("ping %d of the session through the proxy: HTTP %d, want 200 from its replica", i, status)
			}
		}
		owner := -1
		for i := range 3 {
			if set.running(i) {
				if status, _ := set.sessionPost(t, set.url(i), sid, ping); status == http.StatusOK {
					owner = i
				}
			}
		}
		if owner < 0 {
			t.Fatal("no replica knows the session")
		}
		set.stop(owner, syscall.SIGKILL)
		// A request sent on a connection the proxy had to the dead replica
		// is cut (EOF, status 0 here); the next reaches another replica,
		// which does not know the session.
		status = 0
		for attempt := 0; attempt < 5 && status == 0; attempt++ {
			status, _ = set.sessionPost(t, set.proxy, sid, ping)
		}
		if status != http.StatusNotFound {
			t.Fatalf("a ping of the session after %s died: HTTP %d, want 404", set.name(owner), status)
		}
		if status, again := set.sessionPost(t, set.proxy, "", sessionInitialize); status != http.StatusOK || again == "" || again == sid {
			t.Fatalf("a new initialize after %s died: HTTP %d, session %q", set.name(owner), status, again)
		}
	})
}

// sessionInitialize opens a 2025-11-25 session.
const sessionInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"replicas-test","version":"1"}}}`

// sessionPost posts an initialize-era message of session sid (none for
// initialize) to url and returns the HTTP status and the Mcp-Session-Id of
// the answer; a request that reaches no server is status 0.
func (s *replicaSet) sessionPost(t *testing.T, url, sid, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Logf("POST %s: %v", url, err)
		return 0, ""
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// running reports whether replica i runs.
func (s *replicaSet) running(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procs[i] != nil
}

// replicaLease is the -task-lease of the test's replicas: short, so that
// the kill -9 scenario does not wait the default 30s.
const replicaLease = 3 * time.Second

// replicaSet is three replicas, HAProxy, and a connection to the database.
type replicaSet struct {
	t       *testing.T
	bin     string
	dir     string
	dsn     string
	table   string
	keyFile string
	proxy   string // the MCP URL through HAProxy
	// proxyLog is HAProxy's output, where it reports the health checks'
	// verdicts.
	proxyLog *proxyOutput
	db       *pgx.Conn
	client   *http.Client

	mu    sync.Mutex
	procs [3]*exec.Cmd
	addrs [3]string
}

func startReplicaSet(t *testing.T) *replicaSet {
	dsn := testDSN(t)
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("MCPSTDIO_REQUIRE_DSN") != "" {
			t.Fatal("haproxy is not installed")
		}
		t.Skip("haproxy is not installed")
	}
	dir := t.TempDir()
	set := &replicaSet{t: t, dir: dir, dsn: dsn, table: testTable(t), bin: filepath.Join(dir, "mcpstdio-postgres"), keyFile: filepath.Join(dir, "state.key"),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	if out, err := exec.Command("go", "build", "-o", set.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the command: %v\n%s", err, out)
	}
	if err := os.WriteFile(set.keyFile, []byte(strings.Repeat("k", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := range 3 {
			set.stop(i, syscall.SIGKILL)
		}
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "replica-*.log"))
		for _, name := range logs {
			if data, err := os.ReadFile(name); err == nil {
				t.Logf("%s:\n%s", filepath.Base(name), data)
			}
		}
	})
	for i := range 3 {
		set.start(i)
	}
	set.db, err = pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.db.Close(context.Background()) })
	if _, err := set.db.Exec(context.Background(), "LISTEN "+pgx.Identifier{set.table}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	// HAProxy takes its listening socket from the test (bind fd@3), so it is
	// accepting connections before HAProxy even runs.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lnFile, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	set.proxy = "http://" + ln.Addr().String() + "/mcp"
	cmd := exec.Command(haproxy, "-db", "-f", "../testdata/haproxy-replicas/haproxy.cfg")
	cmd.ExtraFiles = []*os.File{lnFile}
	cmd.Env = append(os.Environ(), "MCP_PROXY_BIND=fd@3", "MCP_REPLICA_A="+set.addrs[0], "MCP_REPLICA_B="+set.addrs[1], "MCP_REPLICA_C="+set.addrs[2])
	set.proxyLog = &proxyOutput{}
	cmd.Stdout, cmd.Stderr = set.proxyLog, set.proxyLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	lnFile.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy's log:\n%s", set.proxyLog.String())
		}
	})
	return set
}

func (s *replicaSet) name(i int) string { return string(rune('A' + i)) }

func (s *replicaSet) url(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addrs[i] + "/mcp"
}

// start runs replica i (on its earlier address when it ran before) and
// returns once it serves.
func (s *replicaSet) start(i int) {
	s.t.Helper()
	s.mu.Lock()
	addr := s.addrs[i]
	s.mu.Unlock()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	// A burst of 1000 creations waits for the state row, one commit at a
	// time: the statement timeout leaves room for the whole burst.
	cmd := exec.Command(s.bin, "-dsn", s.dsn, "-db-table", s.table, "-task-lease", replicaLease.String(), "-db-statement-timeout", "60s",
		"-state-key-file", s.keyFile, "-http", addr, "-max-tasks", "5000", "-max-queue", "1024",
		"-max-client-concurrency", "32", "-max-client-queue", "1024", "-log-level", "warn")
	logFile, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("replica-%s-%d.log", s.name(i), time.Now().UnixNano())))
	if err != nil {
		s.t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	// The command names the bound address on stderr once it serves; the
	// rest of stderr goes to the log.
	lines := bufio.NewReader(stderr)
	for {
		line, err := lines.ReadString('\n')
		logFile.WriteString(line)
		if err != nil {
			s.t.Fatalf("replica %s exited before serving: %v (log %s)", s.name(i), err, logFile.Name())
		}
		if rest, ok := strings.CutPrefix(line, "mcpstdio: serving MCP over HTTP at http://"); ok {
			addr = strings.TrimSuffix(strings.TrimSpace(rest), "/mcp")
			break
		}
	}
	go func() {
		io.Copy(logFile, lines)
		logFile.Close()
	}()
	s.mu.Lock()
	s.procs[i], s.addrs[i] = cmd, addr
	s.mu.Unlock()
}

// stop ends replica i with sig and waits for it.
func (s *replicaSet) stop(i int, sig syscall.Signal) {
	s.mu.Lock()
	cmd := s.procs[i]
	s.procs[i] = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	cmd.Wait()
}

// rpc posts a 2026 request declaring the tasks extension; name is the
// Mcp-Name header (a tool or a taskId).
func (s *replicaSet) rpc(url, method, name, params string) (json.RawMessage, *RPCError, error) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + meta + `,` + params[1:] + `}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The response is the stream's last data line.
		var last []byte
		for line := range bytes.Lines(data) {
			if rest, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				last = rest
			}
		}
		data = last
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return nil, nil, fmt.Errorf("%s %s: HTTP %d, body %q", method, url, resp.StatusCode, data)
	}
	return msg.Result, msg.Error, nil
}

func (s *replicaSet) mustCall(t *testing.T, url, method, name, params string) json.RawMessage {
	t.Helper()
	res, rerr, err := s.rpc(url, method, name, params)
	if err != nil || rerr != nil {
		t.Fatalf("%s via %s: %v %+v", method, url, err, rerr)
	}
	return res
}

// tryCreateTask calls tool, which must answer with a CreateTaskResult.
func (s *replicaSet) tryCreateTask(url, tool, args string) (string, error) {
	res, rerr, err := s.rpc(url, "tools/call", tool, `{"name":"`+tool+`","arguments":`+args+`}`)
	if err != nil {
		return "", err
	}
	if rerr != nil {
		return "", fmt.Errorf("tools/call %s: %+v", tool, rerr)
	}
	var w taskWire
	if err := json.Unmarshal(res, &w); err != nil || w.ResultType != resultTypeTask || w.TaskID == "" {
		return "", fmt.Errorf("tools/call %s answered %s, want a CreateTaskResult", tool, res)
	}
	return w.TaskID, nil
}

func (s *replicaSet) createTask(t *testing.T, url, tool, args string) string {
	t.Helper()
	id, err := s.tryCreateTask(url, tool, args)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (s *replicaSet) getTask(t *testing.T, url, id string) taskWire {
	t.Helper()
	var w taskWire
	if err := json.Unmarshal(s.mustCall(t, url, "tasks/get", id, `{"taskId":"`+id+`"}`), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// checkReadable gets task id via url.
func (s *replicaSet) checkReadable(url, id string) error {
	res, rerr, err := s.rpc(url, "tasks/get", id, `{"taskId":"`+id+`"}`)
	if err != nil {
		return err
	}
	var w taskWire
	if rerr != nil || json.Unmarshal(res, &w) != nil || w.TaskID != id {
		return fmt.Errorf("tasks/get %s via %s = %+v %s", id, url, rerr, res)
	}
	return nil
}

// parallel runs check for every id, 32 at a time, failing on an error.
func (s *replicaSet) parallel(t *testing.T, ids []string, check func(string) error) {
	t.Helper()
	work := make(chan string)
	errs := make(chan error, len(ids))
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for id := range work {
				if err := check(id); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// observedRow is what awaitRow reads of a task's row.
type observedRow struct {
	status string
	held   int64
}

// awaitRow waits until task id's row satisfies ok: it reads the row at
// once and after each NOTIFY of the table's channel (each change sends one).
func (s *replicaSet) awaitRow(t *testing.T, id, what string, ok func(observedRow) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		var r observedRow
		err := s.db.QueryRow(ctx, `SELECT status, held FROM `+s.table+` WHERE id = $1`, id).Scan(&r.status, &r.held)
		if err == nil && ok(r) {
			return
		}
		if err != nil && err != pgx.ErrNoRows {
			t.Fatalf("reading task %s: %v", id, err)
		}
		if _, err := s.db.WaitForNotification(ctx); err != nil {
			t.Fatalf("waiting for task %s to be %s (it is %+v): %v", id, what, r, err)
		}
	}
}

// listen opens a 2026 subscriptions/listen stream via url naming task id,
// and returns its SSE data lines as they arrive; the stream is closed when
// the test ends.
func (s *replicaSet) listen(t *testing.T, url, id string) <-chan string {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	body := `{"jsonrpc":"2.0","id":"listen","method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `"]},` + meta + `}}`
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("subscriptions/listen: HTTP %d %s", resp.StatusCode, data)
	}
	lines := make(chan string, 16)
	go func() {
		defer resp.Body.Close()
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				lines <- data
			}
		}
	}()
	return lines
}

// waitForFrame returns the first frame of frames that contains every one of
// parts, failing when the stream ends first (or after a minute).
func waitForFrame(t *testing.T, frames <-chan string, parts ...string) string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case frame, ok := <-frames:
			if !ok {
				t.Fatalf("the stream ended before a frame with %q", parts)
			}
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(frame, p) }) {
				return frame
			}
		case <-timeout:
			t.Fatalf("no frame with %q within a minute", parts)
		}
	}
}

// proxyOutput keeps HAProxy's output and tells a test when a line it waits
// for appears. Written by the command's copying goroutine, read by tests.
type proxyOutput struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	watches map[string]chan struct{}
}

func (o *proxyOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	for text, ch := range o.watches {
		if bytes.Contains(o.buf.Bytes(), []byte(text)) {
			close(ch)
			delete(o.watches, text)
		}
	}
	return len(p), nil
}

// seen returns a channel closed once the output holds text.
func (o *proxyOutput) seen(text string) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch := make(chan struct{})
	if bytes.Contains(o.buf.Bytes(), []byte(text)) {
		close(ch)
		return ch
	}
	if o.watches == nil {
		o.watches = make(map[string]chan struct{})
	}
	o.watches[text] = ch
	return ch
}

func (o *proxyOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
