package main

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// Fuzzing of the HTTP transport's header parsing: the client address behind
// trusted proxies (Forwarded, X-Forwarded-For) and Last-Event-ID, each
// against a reading of its documented rule written apart from it. Seeds:
// f.Add below and testdata/fuzz/<FuzzName>/.

// FuzzClientAddress checks ClientAddress against the documented walk: from
// the remote address, through the hops of Forwarded (its for= parameters;
// else the elements of X-Forwarded-For) from the right, while the address
// reached is a trusted proxy's and the next hop is an IP address (with or
// without a port, IPv6 in brackets or not, no zone; IPv4-mapped ones as
// IPv4). The remote address is one net/http sets: an IP and a port.
func FuzzClientAddress(f *testing.F) {
	f.Add("10.0.0.1:443", "for=192.0.2.60;proto=http, for=\"[2001:db8::1]:4711\"", "", "10.0.0.0/8")
	f.Add("10.0.0.2:1", "", "203.0.113.9, 10.0.0.7 ,10.0.0.8", "10.0.0.0/8,2001:db8::/32")
	f.Add("[::ffff:10.0.0.3]:80", "for=unknown, for=_hidden", "1.1.1.1", "10.0.0.3")
	f.Add("[fe80::1%eth0]:80", "", "", "")
	f.Add("192.0.2.1:9", "for=1.2.3.4", "", "0.0.0.0/0")
	f.Fuzz(func(t *testing.T, remote, forwarded, xff, trusted string) {
		proxies, err := parseTrustedProxies(trusted)
		if _, perr := netip.ParseAddrPort(remote); err != nil || perr != nil {
			return
		}
		h := &HTTPHandler{opts: HTTPOptions{TrustedProxies: proxies}}
		r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
		for line := range strings.SplitSeq(forwarded, "\n") {
			if line != "" {
				r.Header.Add("Forwarded", line)
			}
		}
		for line := range strings.SplitSeq(xff, "\n") {
			if line != "" {
				r.Header.Add("X-Forwarded-For", line)
			}
		}
		got := h.ClientAddress(r)
		if want := referenceClientAddress(remote, r.Header, proxies); got != want {
			t.Fatalf("ClientAddress = %q, want %q (remote %q, Forwarded %q, X-Forwarded-For %q, trusted %v)", got, want, remote, r.Header.Values("Forwarded"), r.Header.Values("X-Forwarded-For"), proxies)
		}
	})
}

// referenceClientAddress is the documented walk (see FuzzClientAddress).
func referenceClientAddress(remote string, header http.Header, proxies []netip.Prefix) string {
	host := remote
	if h, _, err := net.SplitHostPort(remote); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(remote, "["), "]")
	}
	trusted := func(a netip.Addr) bool {
		for _, p := range proxies {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	peer, ok := referenceAddr(host)
	if !ok {
		return host
	}
	if len(proxies) == 0 || !trusted(peer) {
		if peer.Is4() && strings.Contains(host, ":") {
			return peer.String()
		}
		return host
	}
	var hops []string
	if lines := header.Values("Forwarded"); len(lines) > 0 {
		for _, line := range lines {
			for _, element := range strings.Split(line, ",") {
				hop := ""
				for _, pair := range strings.Split(element, ";") {
					name, value, _ := strings.Cut(strings.TrimSpace(pair), "=")
					if strings.ToLower(name) == "for" {
						hop = strings.Trim(value, `"`)
					}
				}
				hops = append(hops, hop)
			}
		}
	} else {
		for _, line := range header.Values("X-Forwarded-For") {
			for _, hop := range strings.Split(line, ",") {
				hops = append(hops, strings.TrimSpace(hop))
			}
		}
	}
	current := peer
	for i := len(hops) - 1; i >= 0 && trusted(current); i-- {
		next, ok := referenceAddr(hops[i])
		if !ok {
			break
		}
		current = next
	}
	return current.String()
}

// referenceAddr reads an IP address with or without a port: "[v6]:port",
// "[v6]", "v4:port", a bare v4 or v6; no zone; IPv4-mapped as IPv4.
func referenceAddr(s string) (netip.Addr, bool) {
	addr, port := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		addr, port = s[1:end], s[end+1:]
		if port != "" {
			if !strings.HasPrefix(port, ":") {
				return netip.Addr{}, false
			}
			port = port[1:]
			if port == "" {
				return netip.Addr{}, false
			}
		}
	case strings.Count(s, ":") == 1:
		addr, port, _ = strings.Cut(s, ":")
		if port == "" {
			return netip.Addr{}, false
		}
	}
	if port != "" {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return netip.Addr{}, false
		}
	}
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" || port != "" && strings.Count(s, ":") == 1 && !a.Is4() {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// FuzzLastEventID checks parseEventID against the form eventID writes,
// "<stream>-<seq>" in decimal, read by hand: surrounding space ignored, each
// number of digits only (leading zeros allowed) fitting 64 bits; and that
// every id it accepts names the event eventID would name that way.
func FuzzLastEventID(f *testing.F) {
	for _, id := range []string{"1-0", " 7-42 ", "18446744073709551615-1", "18446744073709551616-1", "1--2", "-1", "1-", "+1-2", "1-2-3", "0x1-2", "01-002"} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		stream, seq, ok := parseEventID(id)
		ws, wq, wok := referenceEventID(id)
		if ok != wok || ok && (stream != ws || seq != wq) {
			t.Fatalf("parseEventID(%q) = %d, %d, %v; want %d, %d, %v", id, stream, seq, ok, ws, wq, wok)
		}
		if ok {
			l := eventStream{number: stream}
			if s2, q2, ok2 := parseEventID(l.eventID(seq)); !ok2 || s2 != stream || q2 != seq {
				t.Fatalf("the id of event %d-%d reads back as %d-%d %v", stream, seq, s2, q2, ok2)
			}
		}
	})
}

func referenceEventID(id string) (stream, seq uint64, ok bool) {
	a, b, found := strings.Cut(strings.TrimSpace(id), "-")
	if !found {
		return 0, 0, false
	}
	digits := func(s string) (uint64, bool) {
		if s == "" {
			return 0, false
		}
		var n uint64
		for _, c := range []byte(s) {
			if c < '0' || c > '9' || n > (1<<64-1-uint64(c-'0'))/10 {
				return 0, false
			}
			n = n*10 + uint64(c-'0')
		}
		return n, true
	}
	stream, ok1 := digits(a)
	seq, ok2 := digits(b)
	return stream, seq, ok1 && ok2
}
