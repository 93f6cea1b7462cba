package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Replicas behind a load balancer: servers given the same state key accept
// each other's pagination cursors and 2026 requestStates, so a client whose
// every request reaches another replica pages through a list and completes
// a multi-round tool call. The balancer is a round-robin reverse proxy with
// a fixed order, so which replica serves which request is known.

// replicaPageSize is the list page size of the replicas: small, so that
// walking tools/list takes many requests.
const replicaPageSize = 2

// replicaCaps are the client capabilities of every request: enough for the
// input_required fixtures to ask by elicitation.
const replicaCaps = `{"elicitation":{}}`

// roundRobinProxy is a reverse proxy that sends request k to backend
// k mod len(backends) and records which backend served each request.
type roundRobinProxy struct {
	backends []*url.URL // scheme://host:port of each replica
	next     atomic.Uint64
	hits     []atomic.Int64 // requests sent to each backend

	mu     sync.Mutex
	served []int // the backend of each request, in arrival order

	url string // the proxy's MCP endpoint
}

// newRoundRobinProxy serves a round-robin proxy in front of backends (base
// URLs, scheme://host:port) until the end of the test.
func newRoundRobinProxy(t *testing.T, backends []string) *roundRobinProxy {
	t.Helper()
	p := &roundRobinProxy{hits: make([]atomic.Int64, len(backends))}
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			t.Fatalf("backend %q: %v", b, err)
		}
		p.backends = append(p.backends, u)
	}
	transport := &http.Transport{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			i := int((p.next.Add(1) - 1) % uint64(len(p.backends)))
			p.hits[i].Add(1)
			p.mu.Lock()
			p.served = append(p.served, i)
			p.mu.Unlock()
			pr.SetURL(p.backends[i])
		},
		Transport: transport,
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(func() {
		srv.Close()
		transport.CloseIdleConnections()
	})
	p.url = srv.URL + mcpPath
	return p
}

// servedBy returns the backend of each request from the from-th on.
func (p *roundRobinProxy) servedBy(from int) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.served[from:])
}

// requests returns how many requests the proxy has forwarded.
func (p *roundRobinProxy) requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.served)
}

// checkSpread fails the test unless the requests from the from-th on went
// each to another backend than the one before, and to as many backends as
// they could reach.
func (p *roundRobinProxy) checkSpread(t *testing.T, from int) {
	t.Helper()
	served := p.servedBy(from)
	for k := 1; k < len(served); k++ {
		if served[k] == served[k-1] {
			t.Errorf("requests %d and %d both went to replica %d (order %v)", from+k-1, from+k, served[k], served)
		}
	}
	reached := map[int]bool{}
	for _, b := range served {
		reached[b] = true
	}
	if got, want := len(reached), min(len(served), len(p.backends)); got != want {
		t.Errorf("%d requests went to %d replicas (order %v), want %d", len(served), got, served, want)
	}
}

// checkHits fails the test unless every backend has served its round-robin
// share of the requests, and at least one.
func (p *roundRobinProxy) checkHits(t *testing.T) {
	t.Helper()
	n := p.requests()
	for i := range p.hits {
		want := int64((n + len(p.hits) - 1 - i) / len(p.hits))
		if got := p.hits[i].Load(); got != want || got == 0 {
			t.Errorf("replica %d served %d requests, want %d of %d in round-robin order, at least 1", i, got, want, n)
		}
	}
}

// rpcReply is a JSON-RPC response and the HTTP status it came with.
type rpcReply struct {
	status int
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// replicaClient is a 2026-07-28 client of the endpoint url: every request
// is one stateless POST with its mirrored headers.
type replicaClient struct {
	t   *testing.T
	srv *httpTestServer
	id  int
}

func newReplicaClient(t *testing.T, endpoint string) *replicaClient {
	return &replicaClient{t: t, srv: &httpTestServer{t: t, url: endpoint}}
}

// call sends method with the params members params ("" for none) about
// name (the tool's, for tools/call; "" otherwise).
func (c *replicaClient) call(method, name, params string) rpcReply {
	c.t.Helper()
	c.id++
	meta := `"_meta":{"` + metaKeyProtocolVersion + `":"` + ProtocolVersion20260728 + `","` + metaKeyClientCapabilities + `":` + replicaCaps + `}`
	if params != "" {
		meta = params + "," + meta
	}
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(c.id) + `,"method":"` + method + `","params":{` + meta + `}}`
	resp := c.srv.post(stateless(method, name), body)
	text := readBody(c.t, resp)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		c.t.Fatalf("%s: status %d, Content-Type %q, body %.300s; want one JSON response", method, resp.StatusCode, ct, text)
	}
	r := rpcReply{status: resp.StatusCode}
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		c.t.Fatalf("%s: decoding %.300s: %v", method, text, err)
	}
	if (r.Error == nil) == (r.Result == nil) {
		c.t.Fatalf("%s: answered %.300s, want either a result or an error", method, text)
	}
	if r.Error == nil && r.status != http.StatusOK {
		c.t.Fatalf("%s: a result with status %d, want 200", method, r.status)
	}
	return r
}

// walkTools pages through tools/list from the first page to the last,
// passing each nextCursor on. It stops at the first error and returns it
// with the names listed so far.
func walkTools(c *replicaClient) ([]string, *rpcReply) {
	c.t.Helper()
	var names []string
	cursor := ""
	for {
		params := ""
		if cursor != "" {
			params = `"cursor":` + strconv.Quote(cursor)
		}
		reply := c.call("tools/list", "", params)
		if reply.Error != nil {
			return names, &reply
		}
		var page struct {
			Tools      []struct{ Name string }
			NextCursor string
		}
		if err := json.Unmarshal(reply.Result, &page); err != nil {
			c.t.Fatalf("decoding tools/list result %.300s: %v", reply.Result, err)
		}
		if len(page.Tools) == 0 || len(page.Tools) > replicaPageSize {
			c.t.Fatalf("a page of %d tools, want 1 to %d", len(page.Tools), replicaPageSize)
		}
		for _, tool := range page.Tools {
			names = append(names, tool.Name)
		}
		if page.NextCursor == "" {
			return names, nil
		}
		cursor = page.NextCursor
	}
}

// mrtrCase is a tool that asks the client in rounds: rounds[i] holds the
// answers to round i's inputRequests, by input key (which must be exactly
// the keys asked), and final is the text of the complete result.
type mrtrCase struct {
	tool   string
	rounds []map[string]string
	final  string
}

func (m mrtrCase) requests() int { return len(m.rounds) + 1 }

var replicaMRTRCases = []mrtrCase{
	{"test_input_required_result_elicitation",
		[]map[string]string{{"user_name": `{"action":"accept","content":{"name":"Alice"}}`}},
		"Hello, Alice!"},
	{"test_input_required_result_request_state",
		[]map[string]string{{"confirm": `{"action":"accept","content":{"ok":true}}`}},
		"state-ok: requestState validated"},
	// Three requests: step2 is asked once step1 is answered, and step1's
	// answer travels in the requestState of round 2.
	{"test_input_required_result_multi_round",
		[]map[string]string{
			{"step1": `{"action":"accept","content":{"name":"Alice"}}`},
			{"step2": `{"action":"accept","content":{"color":"blue"}}`},
		},
		"Multi-round complete for Alice who likes blue"},
}

// callToCompletion calls m.tool and answers its rounds, each retry carrying
// the requestState of the answer before. It stops at the first error and
// returns it.
func callToCompletion(c *replicaClient, m mrtrCase) *rpcReply {
	c.t.Helper()
	params := `"name":` + strconv.Quote(m.tool) + `,"arguments":{}`
	for round := 0; ; round++ {
		reply := c.call("tools/call", m.tool, params)
		if reply.Error != nil {
			return &reply
		}
		var res struct {
			ResultType    string
			InputRequests map[string]json.RawMessage
			RequestState  string
			Content       []struct{ Text string }
		}
		if err := json.Unmarshal(reply.Result, &res); err != nil {
			c.t.Fatalf("decoding tools/call result %.300s: %v", reply.Result, err)
		}
		if round == len(m.rounds) {
			if res.ResultType != "complete" || len(res.Content) != 1 || res.Content[0].Text != m.final {
				c.t.Fatalf("%s, last round: %s, want the complete result %q", m.tool, reply.Result, m.final)
			}
			return nil
		}
		answers := m.rounds[round]
		if res.ResultType != "input_required" || res.RequestState == "" || !sameKeys(res.InputRequests, answers) {
			c.t.Fatalf("%s, round %d: %s, want input_required asking %v with a requestState", m.tool, round+1, reply.Result, slices.Sorted(maps.Keys(answers)))
		}
		var responses []string
		for _, key := range slices.Sorted(maps.Keys(answers)) {
			responses = append(responses, strconv.Quote(key)+":"+answers[key])
		}
		params = `"name":` + strconv.Quote(m.tool) + `,"arguments":{},"inputResponses":{` + strings.Join(responses, ",") +
			`},"requestState":` + strconv.Quote(res.RequestState)
	}
}

func sameKeys(asked map[string]json.RawMessage, answers map[string]string) bool {
	return slices.Equal(slices.Sorted(maps.Keys(asked)), slices.Sorted(maps.Keys(answers)))
}

// replicaFlow is a conversation whose every request after the first carries
// what an earlier answer issued (a cursor or a requestState), checked
// against its expected outcome when it completes. run returns the first
// error answered, nil when the flow completed; requests is how many
// requests a completed flow makes; refusal is the -32602 message of a
// replica that cannot verify what it was given.
type replicaFlow struct {
	name     string
	requests int
	refusal  string
	run      func(c *replicaClient) *rpcReply
}

// replicaFlows are the flows over a catalog whose whole tools/list is
// reference, in order.
func replicaFlows(t *testing.T, reference []string) []replicaFlow {
	t.Helper()
	if len(reference) <= 2*replicaPageSize {
		t.Fatalf("%d tools: too few for a walk through three pages", len(reference))
	}
	flows := []replicaFlow{{
		name:     "tools/list walk",
		requests: (len(reference) + replicaPageSize - 1) / replicaPageSize,
		refusal:  "Invalid cursor",
		run: func(c *replicaClient) *rpcReply {
			names, refused := walkTools(c)
			if refused == nil && !slices.Equal(names, reference) {
				c.t.Fatalf("walking tools/list across replicas listed\n%v\nwant one replica's list\n%v", names, reference)
			}
			return refused
		},
	}}
	for _, m := range replicaMRTRCases {
		flows = append(flows, replicaFlow{
			name:     m.tool,
			requests: m.requests(),
			refusal:  msgRequestStateInvalid,
			run:      func(c *replicaClient) *rpcReply { return callToCompletion(c, m) },
		})
	}
	return flows
}

// runReplicaFlow runs f through the proxy and checks that it completed in
// f.requests requests, spread over the replicas.
func runReplicaFlow(t *testing.T, p *roundRobinProxy, f replicaFlow) {
	t.Helper()
	from := p.requests()
	c := newReplicaClient(t, p.url)
	if refused := f.run(c); refused != nil {
		t.Fatalf("request %d of the flow (from 0; replica order %v) refused: status %d, error %d %q", p.requests()-from-1, p.servedBy(from), refused.status, refused.Error.Code, refused.Error.Message)
	}
	if n := p.requests() - from; n != f.requests {
		t.Fatalf("the flow took %d requests, want %d", n, f.requests)
	}
	p.checkSpread(t, from)
}

// newReplica serves the reference catalog, paged replicaPageSize at a time
// with key as its state key, until the end of the test; it returns its base
// URL.
func newReplica(t *testing.T, key []byte) string {
	t.Helper()
	rt := newReplicaRuntime(t, key, replicaPageSize)
	s := newHTTPTestServer(t, rt, HTTPOptions{})
	return strings.TrimSuffix(s.url, mcpPath)
}

func newReplicaRuntime(t *testing.T, key []byte, pageSize int) *Runtime {
	t.Helper()
	rt := newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "replica", Version: "1"}, PageSize: pageSize, StateKey: key, Tasks: TaskOptions{}})
	if err := registerReferenceCatalog(rt); err != nil {
		t.Fatalf("registerReferenceCatalog: %v", err)
	}
	return rt
}

// referenceToolNames is the whole tools/list of the reference catalog, in
// one page.
func referenceToolNames(t *testing.T) []string {
	t.Helper()
	var list struct {
		Tools      []Tool
		NextCursor string
	}
	decodeResult(t, dispatch(newReplicaRuntime(t, nil, 0), statelessRequest("tools/list", "")), &list)
	if list.NextCursor != "" {
		t.Fatal("the reference catalog does not fit one default page")
	}
	names := make([]string, len(list.Tools))
	for i, tool := range list.Tools {
		names[i] = tool.Name
	}
	return names
}

// Three in-process replicas with one state key behind a round-robin proxy:
// every page of tools/list and every round of a multi-round tool call is
// served by another replica than the one that issued its cursor or
// requestState, and the flows complete as on one server.
func TestHTTPReplicasShareCursorsAndRequestState(t *testing.T) {
	p := newRoundRobinProxy(t, []string{newReplica(t, stateKey(1)), newReplica(t, stateKey(1)), newReplica(t, stateKey(1))})
	for _, f := range replicaFlows(t, referenceToolNames(t)) {
		t.Run(f.name, func(t *testing.T) { runReplicaFlow(t, p, f) })
	}
	p.checkHits(t)
}

// The same flows with one replica given another state key: the first
// request whose cursor or requestState that replica issued, or that it is
// asked to verify, is refused -32602 with HTTP status 400; a flow that never
// crosses it completes.
func TestHTTPReplicaWithAnotherKeyRefuses(t *testing.T) {
	const replicas = 3
	for _, f := range replicaFlows(t, referenceToolNames(t)) {
		for stranger := range replicas {
			t.Run(f.name+"/stranger "+strconv.Itoa(stranger), func(t *testing.T) {
				var backends []string
				for i := range replicas {
					key := stateKey(1)
					if i == stranger {
						key = stateKey(2)
					}
					backends = append(backends, newReplica(t, key))
				}
				p := newRoundRobinProxy(t, backends)
				// Request k goes to replica k mod 3 and carries what
				// request k-1's replica issued.
				want := -1
				for k := 1; k < f.requests; k++ {
					if k%replicas == stranger || (k-1)%replicas == stranger {
						want = k
						break
					}
				}
				refused := f.run(newReplicaClient(t, p.url))
				switch {
				case want < 0 && refused != nil:
					t.Fatalf("refused %d %q, want the flow to complete: it never crosses replica %d", refused.Error.Code, refused.Error.Message, stranger)
				case want < 0:
					return
				case refused == nil:
					t.Fatalf("the flow completed, want request %d refused", want)
				case refused.status != http.StatusBadRequest || refused.Error.Code != CodeInvalidParams || refused.Error.Message != f.refusal:
					t.Fatalf("refused with status %d, error %d %q; want 400, %d %q", refused.status, refused.Error.Code, refused.Error.Message, CodeInvalidParams, f.refusal)
				}
				if got := p.requests() - 1; got != want {
					t.Fatalf("request %d refused (order %v), want request %d", got, p.servedBy(0), want)
				}
			})
		}
	}
}

// Three processes started with the same -state-key-file behind a
// round-robin proxy: tools/list pages and multi-round tool calls complete
// with every request on another process; SIGTERM then ends each with exit
// status 0.
func TestBinaryHTTPReplicasShareCursorsAndRequestState(t *testing.T) {
	key := writeKeyFile(t, strings.Repeat("r", 32)+"\n")
	var procs []*httpServerProcess
	var backends []string
	for range 3 {
		p := startHTTPServer(t, "-state-key-file", key, "-page-size", strconv.Itoa(replicaPageSize))
		procs = append(procs, p)
		backends = append(backends, p.base)
	}
	// The whole list as one process pages it, without the proxy.
	reference, refused := walkTools(newReplicaClient(t, backends[0]+mcpPath))
	if refused != nil {
		t.Fatalf("walking tools/list on one process: %d %q", refused.Error.Code, refused.Error.Message)
	}
	if !slices.IsSorted(reference) || len(slices.Compact(slices.Clone(reference))) != len(reference) {
		t.Fatalf("one process lists tools out of order or twice: %v", reference)
	}
	p := newRoundRobinProxy(t, backends)
	for _, f := range replicaFlows(t, reference) {
		t.Run(f.name, func(t *testing.T) { runReplicaFlow(t, p, f) })
	}
	p.checkHits(t)
	for i, proc := range procs {
		if code := proc.stop(); code != 0 {
			t.Errorf("replica %d: exit status %d after SIGTERM, stderr: %s", i, code, proc.stderrText())
		}
	}
}
