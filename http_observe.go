package main

import (
	"context"
	"net/http"
)

// transportValues is the context whose values the handlers of r's messages
// carry: r's own, with what the observer needs of r (the client's address,
// the traceparent header) when there is an observer. The client's address
// is ClientAddress's (a trusted proxy's forwarded address, else r's remote
// address).
func (h *HTTPHandler) transportValues(r *http.Request) context.Context {
	if h.opts.Observer == nil {
		return r.Context()
	}
	return withTransportInfo(r.Context(), h.opts.Observer, TransportInfo{
		ClientAddress: h.ClientAddress(r),
		Traceparent:   firstHeader(r.Header, headerTraceparent),
		Tracestate:    firstHeader(r.Header, headerTracestate),
	})
}
