package main

import "slices"

// JSON-RPC batches (2025-03-26 only, the one version that allows them): an
// array of requests, notifications and responses, answered with one array
// of the requests' responses, in the order of the requests. Each member is a message of the connection
// like any other (admitted, held, cancelled and answered alone); only its
// answer goes to the batch, which answers its own route once every member
// is done. A batch in a connection of any other version is refused as
// before: -32600 Invalid Request.

// batch is a JSON-RPC batch being answered. Owned by the connection's owner.
type batch struct {
	route   route    // where the array goes
	pending int      // members not done yet
	answers [][]byte // the members' response frames, in the members' order (nil: none)
}

// batchMember is the route of one member of a batch, the index-th.
type batchMember struct {
	b     *batch
	index int
}

// rootRoute is the route the frames of r finally go to: a batch's own for a
// member of it.
func rootRoute(r route) route {
	if m, ok := r.(*batchMember); ok {
		return m.b.route
	}
	return r
}

// send passes a frame of r's answer to the outlet: a member's notifications
// and requests go out at once, on the batch's route.
func (c *connection) send(r route, frame []byte, done chan<- peerReply) error {
	return c.out.send(rootRoute(r), frame, done)
}

// answer ends r's answer with f (f.frame nil: none). A batch member's frame
// is kept until every member is done; then the batch is answered with the
// array of them all, or with nothing when no member was a request that is
// answered (only notifications and responses, or cancelled ones).
func (c *connection) answer(r route, f finalFrame) error {
	m, ok := r.(*batchMember)
	if !ok {
		return c.out.answer(r, f)
	}
	b := m.b
	b.answers[m.index] = f.frame
	if b.pending--; b.pending > 0 {
		return nil
	}
	if !slices.ContainsFunc(b.answers, func(f []byte) bool { return f != nil }) {
		return c.out.answer(b.route, noAnswer)
	}
	return c.out.answer(b.route, finalFrame{frame: batchFrame(b.answers)})
}

// batchFrame joins response frames (nil ones skipped) into one frame
// holding their array.
func batchFrame(frames [][]byte) []byte {
	n := 2
	for _, f := range frames {
		n += len(f)
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for _, f := range frames {
		if f == nil {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, f[:len(f)-1]...) // without its newline
	}
	return append(out, "]\n"...)
}

// acceptsBatch reports whether m is a batch the connection serves as one:
// an array, in a connection that negotiated 2025-03-26.
func (c *connection) acceptsBatch(m message) bool {
	return m.env.kind == kindArray && m.raw != nil && acceptsBatches(c.session.ProtocolVersion)
}

// onBatch serves the members of the batch m, each as a message of its own
// whose answer goes to the batch. An empty array is one invalid request,
// answered -32600 alone (as JSON-RPC says), and so is a member that is
// itself an array.
func (c *connection) onBatch(m message) error {
	members := arrayElements(m.raw)
	if len(members) == 0 {
		return c.answer(m.route, errorAnswer("", errInvalidRequest))
	}
	b := &batch{route: m.route, pending: len(members), answers: make([][]byte, len(members))}
	for i, raw := range members {
		env, err := decodeEnvelope(raw)
		if err != nil { // the batch decoded whole: a member cannot fail alone
			env = envelope{}
		}
		member := message{env: env, size: len(raw), route: &batchMember{b: b, index: i}, header: m.header, values: m.values, hold: m.hold}
		if m.header != nil {
			member.header = cloneHeader(m.header)
		}
		if err := c.onMessage(member); err != nil {
			return err
		}
	}
	return nil
}

// cloneHeader copies a request's headers, for a batch member of its own.
func cloneHeader(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = v
	}
	return out
}
