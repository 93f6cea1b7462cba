package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The clients of the HTTP handler's executor, and POST bodies counted
// against their share before they are read.
//
// A POST belongs to the client that its headers name, decided before its
// body is read: HTTPOptions.ClientKey's answer when it gives one, else the
// principal it was authorized as (whatever session it belongs to), else the
// live session its Mcp-Session-Id names, else its client address (see
// ClientAddress: the stateless requests of one host share one client). Its
// body counts against the in-flight byte budget and the client's share from
// before it is read (by Content-Length; a chunked body as it arrives) until
// its answer is written or its stream ends, because the message served
// holds it that long; a body that does not fit is refused 503 (see
// refuseUnread).
//
// The shares are work-conserving (docs/explanation/contract.md, "Executor",
// ExecutorOptions): a client alone may use the whole executor; the shares bind
// only while other clients wait.

// clientTable holds the executor clients of the handler's POSTs by name. An
// entry lives while a POST uses it or its client still holds something (a
// job whose function has not returned after its request ended), and after
// that until a sweep finds it idle: a client that makes one call after
// another keeps its entry rather than making one per call. Sweeps come as
// the table grows (see sweep), so idle entries are at most as many as
// busy ones, or minClientSweep.
type clientTable struct {
	e *Executor // read-only after init

	mu      sync.Mutex
	byName  map[clientName]*clientEntry // guarded by mu
	sweepAt int                         // sweep when a new entry would make this many; guarded by mu
}

// clientName names a client of the handler's executor: what decided it and
// the name it gave (a pair, so that naming one costs no string of its own).
type clientName struct {
	kind clientKind
	name string
}

// clientKind is what decided a POST's client (see the comment at the top).
type clientKind uint8

const (
	clientByKey       clientKind = iota + 1 // HTTPOptions.ClientKey's answer
	clientByPrincipal                       // the principal it was authorized as (principalBinding)
	clientBySession                         // the session, which has no other
	clientByAddr                            // its remote address's host
)

// clientEntry is one client of the table and its POSTs being served.
type clientEntry struct {
	name   clientName      // read-only
	client *executorClient // read-only
	users  int             // guarded by clientTable.mu
	// acquired counts the calls of acquire that returned it; guarded by
	// clientTable.mu. A sweep drops the entry only if it is unchanged.
	acquired uint64
}

// minClientSweep is the table size below which entries are not swept.
const minClientSweep = 64

func (t *clientTable) init(e *Executor) {
	t.e, t.byName, t.sweepAt = e, make(map[clientName]*clientEntry), minClientSweep
}

// acquire returns the entry of name, created if needed, with one more user;
// the caller calls release when its POST is served.
func (t *clientTable) acquire(name clientName) *clientEntry {
	t.mu.Lock()
	en := t.byName[name]
	if en == nil && len(t.byName) >= t.sweepAt {
		t.mu.Unlock()
		t.sweep()
		t.mu.Lock()
		en = t.byName[name]
	}
	if en == nil {
		en = &clientEntry{name: name, client: t.e.newClient()}
		t.byName[name] = en
	}
	en.users++
	en.acquired++
	t.mu.Unlock()
	return en
}

// release drops a user of en. The entry stays, for the client's next POST,
// until a sweep finds it idle.
func (t *clientTable) release(en *clientEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	en.users--
}

// sweep drops the entries with no user whose client holds nothing, and sets
// the next sweep at twice what remains: their number is bounded by the jobs
// and reservations held, so the table stays proportional to the load. It
// holds no lock of the table while it asks the executor (idleClients, one
// call for all entries): the entries are listed under t.mu, the executor is
// asked without it, and an entry is dropped only if it had no user since
// it was listed (its acquired count unchanged), since the executor's answer
// may be stale for one that had.
func (t *clientTable) sweep() {
	type candidate struct {
		en       *clientEntry
		acquired uint64
	}
	t.mu.Lock()
	candidates := make([]candidate, 0, len(t.byName))
	clients := make([]*executorClient, 0, len(t.byName))
	for _, en := range t.byName {
		if en.users == 0 {
			candidates = append(candidates, candidate{en, en.acquired})
			clients = append(clients, en.client)
		}
	}
	t.mu.Unlock()
	idle := t.e.idleClients(clients)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range candidates {
		if en := c.en; en.users == 0 && en.acquired == c.acquired && idle[en.client] && t.byName[en.name] == en {
			delete(t.byName, en.name)
		}
	}
	t.sweepAt = max(2*len(t.byName), minClientSweep)
}

// len returns the number of entries.
func (t *clientTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byName)
}

// clientName names the client of a POST, whose Mcp-Session-Id names the
// live session s (nil: none); see the comment at the top.
func (h *HTTPHandler) clientName(r *http.Request, s *httpSession) clientName {
	if name, ok := h.sessionClientName(r); ok {
		return name
	}
	if s != nil {
		return sessionClientName(s.id)
	}
	return clientName{clientByAddr, h.ClientAddress(r)}
}

// sessionClientName names the client of the session r's initialize creates
// (and of any other request it makes): ClientKey's answer, else the
// principal r was authorized as; false when r has neither, and a session
// then is a client of its own.
func (h *HTTPHandler) sessionClientName(r *http.Request) (clientName, bool) {
	if h.opts.ClientKey != nil {
		if key := h.opts.ClientKey(r); key != "" {
			return clientName{clientByKey, key}, true
		}
	}
	if p := principalBinding(PrincipalFromContext(r.Context())); p != "" {
		return clientName{clientByPrincipal, p}, true
	}
	return clientName{}, false
}

// sessionClientName is the client name of a session that has no other.
func sessionClientName(id string) clientName { return clientName{clientBySession, id} }

// initSubmitterFor makes sub, a zero submitter, a new submitter of client
// (a message's postedMessage.client; nil: a client of its own), whose
// outcomes channel buffers one outcome: what a connection that serves one
// message alone needs.
func (h *HTTPHandler) initSubmitterFor(sub *submitter, client *executorClient) {
	if client == nil {
		client = h.executor.newClient()
	}
	client.initSubmitter(sub, 1)
}

// executorOptions returns the options of the executor the handler creates:
// its limits, and each client's share of them (0: the whole, as for
// ExecutorOptions).
func (o *HTTPOptions) executorOptions() ExecutorOptions {
	return ExecutorOptions{MaxConcurrency: o.MaxConcurrency, MaxQueue: o.MaxQueue, MaxInflightBytes: o.MaxInflightBytes,
		MaxClientConcurrency: o.MaxClientConcurrency, MaxClientQueue: o.MaxClientQueue, MaxClientInflightBytes: o.MaxClientInflightBytes}
}

// bodyChunk is the first reservation of a body of unknown length (chunked),
// which then doubles as it arrives.
const bodyChunk = 64 << 10

// inlineBodyBytes is the room a session POST's record keeps for its body: a
// body of a known length that fits is read there, so that it costs no
// allocation of its own (most calls are short: a tools/call with 100 bytes
// of arguments is about 330; a longer body gets its own buffer;
// BenchmarkRecordSizes reports the record's size). A 2026 POST's record,
// which is reused, has none: a handler may keep its params, which are the
// body's bytes.
const inlineBodyBytes = 440

// postInput is the room of one POST's body and its reservation, part of
// the record a session's POST allocates (httpExchange). A body read into it
// keeps the whole record alive as long as anything holds the body's bytes,
// as a request's params do.
type postInput struct {
	res  reservation
	body [inlineBodyBytes]byte
}

// readBody reads a POST body of at most MaxBodyBytes within ReadBodyTimeout,
// its bytes reserved for client: all of them before reading when the
// Content-Length is known, else as they arrive. It answers the request
// itself when the body cannot be read: 415, 413, 408, 400, and 503 (a
// JSON-RPC -32603 "Server execution capacity exhausted" without id, since
// none is known) when the bytes do not fit in the in-flight budget or the
// client's share, or "Server shutting down" once Shutdown cut body reads.
// On success the caller releases the reservation, which is held in res. A
// body of a known length that fits in room (nil: none) is read there.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request, client *executorClient, res *reservation, room []byte) ([]byte, *reservation, bool) {
	if !isJSONMediaType(firstHeader(r.Header, headerContentType)) {
		httpError(w, http.StatusUnsupportedMediaType, "Unsupported Media Type: Content-Type must be application/json")
		return nil, nil, false
	}
	limit := int64(h.opts.MaxBodyBytes)
	if r.ContentLength > limit {
		h.bodyTooLarge(w)
		return nil, nil, false
	}
	if err := client.reserveInto(res, int(max(r.ContentLength, 0))); err != nil {
		refuseUnread(w, err)
		return nil, nil, false
	}
	// The deadline is the connection's: it is lifted once the body is read,
	// else it would end the response streams that outlive it (when reading
	// failed it stays, so the server does not wait for the rest of the body
	// either). A response that cannot take deadlines is read without. A
	// drain that found nothing in flight cuts the read (startRead, endRead).
	rc := http.NewResponseController(w)
	timed := rc.SetReadDeadline(time.Now().Add(h.opts.ReadBodyTimeout)) == nil
	if !h.drain.startRead(w, r) {
		res.release()
		refuseUnread(w, ErrExecutorClosed)
		return nil, nil, false
	}
	var body []byte
	var err error
	switch {
	case r.ContentLength >= 0 && r.ContentLength <= int64(len(room)):
		body = room[:r.ContentLength]
		_, err = io.ReadFull(r.Body, body)
	case r.ContentLength >= 0:
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	default:
		body, err = readGrowing(http.MaxBytesReader(w, r.Body, limit), limit, res)
	}
	cut := h.drain.endRead(r)
	if err != nil {
		res.release()
		_, tooLarge := errors.AsType[*http.MaxBytesError](err)
		switch {
		case errors.Is(err, errOverloaded), errors.Is(err, ErrExecutorClosed):
			refuseUnread(w, err)
		case cut && errors.Is(err, os.ErrDeadlineExceeded):
			refuseUnread(w, ErrExecutorClosed)
		case tooLarge:
			h.bodyTooLarge(w)
		case errors.Is(err, os.ErrDeadlineExceeded):
			httpError(w, http.StatusRequestTimeout, "Request Timeout: the body took longer than "+h.opts.ReadBodyTimeout.String()+" to arrive")
		default:
			httpError(w, http.StatusBadRequest, "Bad Request: reading the body failed")
		}
		return nil, nil, false // the deadline stays: the rest of the body is not waited for
	}
	if timed {
		rc.SetReadDeadline(time.Time{})
	}
	return body, res, true
}

// readGrowing reads src, which fails beyond limit bytes, to its end into a
// buffer whose capacity res counts: the buffer doubles (from bodyChunk, and
// to at most limit+1, where src fails), and res grows first; it fails with
// grow's error when the bytes do not fit.
func readGrowing(src io.Reader, limit int64, res *reservation) ([]byte, error) {
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			size := int(min(max(2*int64(cap(buf)), bodyChunk), limit+1))
			if err := res.grow(size - cap(buf)); err != nil {
				return nil, err
			}
			grown := make([]byte, len(buf), size)
			copy(grown, buf)
			buf = grown
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (h *HTTPHandler) bodyTooLarge(w http.ResponseWriter) {
	httpError(w, http.StatusRequestEntityTooLarge, "Request body exceeds the "+strconv.Itoa(h.opts.MaxBodyBytes)+"-byte limit")
}

// refuseUnread answers a POST whose body could not be reserved: 503, with the
// executor's overload message (or the shutdown message once it is closed).
// The connection is closed after the answer, so that the server does not
// read the rest of the body to keep it (net/http reads up to 256 KiB of an
// unread body before it answers, unless it closes the connection).
func refuseUnread(w http.ResponseWriter, err error) {
	message := errCapacity.Message
	if errors.Is(err, ErrExecutorClosed) {
		message = errShuttingDown.Message
	}
	w.Header().Set("Connection", "close")
	httpError(w, http.StatusServiceUnavailable, message)
}

// ClientAddress returns the address of the client that sent r, as the
// handler counts it (the shares of stateless requests, MaxClientSessions)
// and as telemetry and logs should report it (client.address): r's remote
// IP, without the port. Only when that peer is one of
// HTTPOptions.TrustedProxies does a forwarded address count: the hops of
// the Forwarded header's for= parameters (RFC 7239) when r has that header,
// else of X-Forwarded-For, read from the right, each believed only while
// the hop that reported it is trusted; the result is the right-most hop
// that is not a trusted proxy (the left-most when all are). A hop that is
// not an IP address (unknown, an obfuscated name, garbage) ends the walk at
// the trusted hop that reported it. A request from an untrusted peer is
// its remote address, whatever it says of itself.
//
// With authorization on, the client of a request is its principal, not
// this address (see HTTPOptions.ClientKey); the address is still what
// client.address reports.
func (h *HTTPHandler) ClientAddress(r *http.Request) string {
	host := hostWithoutPort(r.RemoteAddr) // a substring: no allocation on the common path
	if len(h.opts.TrustedProxies) == 0 && !strings.Contains(host, ":") {
		return host // as below, without parsing what only an IPv6 form changes
	}
	peer, ok := parseHostAddr(host)
	switch {
	case !ok:
		return host
	case len(h.opts.TrustedProxies) == 0 || !h.trusted(peer):
		if peer.BitLen() == 32 && strings.Contains(host, ":") { // IPv4-mapped IPv6, unmapped
			return peer.String()
		}
		return host
	}
	client, _ := h.walkHops(peer, forwardedHops(r.Header))
	return client.String()
}

// walkHops walks the hops a request was forwarded for from the right,
// starting from its peer, each believed while the hop that reported it is
// trusted (see ClientAddress). It returns the client's address and the
// index of the hop reported by the proxy facing the client: -1 when the
// peer is not a trusted proxy or there are no hops.
func (h *HTTPHandler) walkHops(peer netip.Addr, hops []string) (client netip.Addr, reported int) {
	client, reported = peer, -1
	for i := len(hops) - 1; i >= 0 && h.trusted(client); i-- {
		reported = i
		hop, ok := parseHostAddr(hops[i])
		if !ok {
			break
		}
		client = hop
	}
	return client, reported
}

// forwardedOrigin returns the scheme and host r was addressed to, as the
// trusted proxy facing the client reports them in its element of the
// Forwarded header (proto= and host=, RFC 7239): "" for each it does not
// report or reports malformed. Only Forwarded counts (X-Forwarded-Proto
// and X-Forwarded-Host are not read); a request whose peer is not one of
// HTTPOptions.TrustedProxies gets "" for both.
func (h *HTTPHandler) forwardedOrigin(r *http.Request) (scheme, host string) {
	if len(h.opts.TrustedProxies) == 0 {
		return "", ""
	}
	peer, ok := parseHostAddr(hostWithoutPort(r.RemoteAddr))
	if !ok {
		return "", ""
	}
	elements := forwardedElements(r.Header)
	hops := make([]string, len(elements))
	for i, e := range elements {
		hops[i] = e.forHop
	}
	_, i := h.walkHops(peer, hops)
	if i < 0 {
		return "", ""
	}
	if proto := strings.ToLower(elements[i].proto); proto == "http" || proto == "https" {
		scheme = proto
	}
	if u, err := url.Parse("http://" + elements[i].host); err == nil && u.Host == elements[i].host && u.Path == "" && u.User == nil {
		host = elements[i].host
	}
	return scheme, host
}

// trusted reports whether addr is in one of HTTPOptions.TrustedProxies.
func (h *HTTPHandler) trusted(addr netip.Addr) bool {
	for _, p := range h.opts.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// forwardedHops returns the addresses a request was forwarded for, left
// (the original client) to right (the last proxy's peer): the for=
// parameters of the Forwarded header when there is one, else the
// comma-separated elements of X-Forwarded-For. Every line of the header
// counts, in order. A Forwarded element without for= is a hop "" (not an
// address).
func forwardedHops(header http.Header) []string {
	var hops []string
	if elements := forwardedElements(header); len(elements) > 0 {
		for _, e := range elements {
			hops = append(hops, e.forHop)
		}
		return hops
	}
	for _, line := range header.Values("X-Forwarded-For") {
		for hop := range strings.SplitSeq(line, ",") {
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	return hops
}

// forwardedElement is one element of a Forwarded header (RFC 7239): what
// one proxy reported of the request it received. A parameter it does not
// report is "".
type forwardedElement struct {
	forHop, host, proto string
}

// forwardedElements returns the elements of r's Forwarded header, left
// (the proxy facing the client) to right; every line counts, in order.
func forwardedElements(header http.Header) []forwardedElement {
	var elements []forwardedElement
	for _, line := range header.Values("Forwarded") {
		for element := range strings.SplitSeq(line, ",") {
			var e forwardedElement
			for pair := range strings.SplitSeq(element, ";") {
				name, value, _ := strings.Cut(strings.TrimSpace(pair), "=")
				value = strings.Trim(value, `"`)
				switch strings.ToLower(name) {
				case "for":
					e.forHop = value
				case "host":
					e.host = value
				case "proto":
					e.proto = value
				}
			}
			elements = append(elements, e)
		}
	}
	return elements
}

// parseHostAddr parses an IP address, with or without a port, an IPv6 one
// in brackets or not (as RemoteAddr, X-Forwarded-For and Forwarded write
// them); an IPv4-mapped IPv6 address is its IPv4 address. False when it is
// not an address (a bracket without its pair included).
func parseHostAddr(s string) (netip.Addr, bool) {
	// Without a port first: a remote address's host parses at once (a
	// failed parse allocates its error).
	host := s
	if len(s) > 1 && s[0] == '[' && s[len(s)-1] == ']' {
		host = s[1 : len(s)-1]
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap(), a.Zone() == ""
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// parseTrustedProxies parses a comma-separated list of CIDR prefixes or
// single addresses (a /32 or /128), as the -http-trusted-proxies flag takes
// it, for HTTPOptions.TrustedProxies. An empty string is no proxy.
func parseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is neither a CIDR prefix nor an IP address", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
