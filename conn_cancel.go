package main

// Cancellation and the messages held behind an initialize: what a
// notifications/cancelled, a client that left, or the end of input does to a
// connection (conn.go), on its owner goroutine.

import (
	"maps"
	"slices"
)

// onInputEnd records that no more messages come: open subscriptions close
// without a final message, and server-to-client requests fail, since no
// response can arrive any more. Admitted requests go on and are answered.
func (c *connection) onInputEnd() error {
	c.inputEnded = true
	for _, id := range slices.Sorted(maps.Keys(c.subs)) {
		if err := c.closeSubscription(id, noAnswer); err != nil {
			return err
		}
	}
	for id, out := range c.outgoing {
		delete(c.outgoing, id)
		out.reply <- peerReply{err: ErrNoClientInput}
	}
	return nil
}

// onCancel handles notifications/cancelled inline
// (docs/explanation/contract.md, "Coordinator"): the named in-flight request is
// cancelled and forgotten at once, so nothing is ever written for it and its id
// can be reused by the very next message; a named subscription closes without a
// final message. An initialize cannot be cancelled. Unknown ids and malformed
// params are ignored.
func (c *connection) onCancel(params []byte) error {
	id, ok := cancelledID(params)
	if !ok {
		return nil
	}
	if _, ok := c.subs[id]; ok {
		return c.closeSubscription(id, noAnswer)
	}
	if i := c.heldIndex(id); i >= 0 {
		if ex := c.held[i]; ex.method != methodInitialize {
			ex.endOperation(OperationEnd{Outcome: OperationCancelled})
			c.dropHeld(i)
			return c.answer(ex.route, noAnswer)
		}
		return nil
	}
	ex := c.byID.get(id)
	if ex == nil || ex.method == methodInitialize {
		return nil
	}
	return c.cancel(ex)
}

// cancelRoute cancels the requests whose answers go to r (one, or the
// members of a batch), as a notifications/cancelled naming them would (an
// initialize too: its client is gone): nothing more is sent to r.
func (c *connection) cancelRoute(r route) {
	c.held = slices.DeleteFunc(c.held, func(ex *execution) bool {
		if rootRoute(ex.route) != r {
			return false
		}
		ex.endOperation(OperationEnd{Outcome: OperationCancelled})
		c.heldBytes -= ex.job.size
		delete(c.heldArrays, ex)
		return true
	})
	for ex := range c.byID.all() {
		if rootRoute(ex.route) == r {
			c.stop(ex)
		}
	}
	for _, ex := range c.untracked {
		if rootRoute(ex.route) == r {
			c.stop(ex)
		}
	}
}

// stop cancels and forgets ex; what it held behind it goes on.
func (c *connection) stop(ex *execution) {
	ex.endOperation(OperationEnd{Outcome: OperationCancelled})
	c.sub.cancelJob(&ex.job)
	c.forget(ex)
	if ex.gates {
		c.releaseHeld()
	}
}

// cancel stops ex, forgets it and ends its answer without a response.
func (c *connection) cancel(ex *execution) error {
	ex.endOperation(OperationEnd{Outcome: OperationCancelled})
	c.sub.cancelJob(&ex.job)
	c.forget(ex)
	return c.answer(ex.route, noAnswer)
}

// cancelledID returns the canonical id that the params of
// notifications/cancelled name, or false when they are malformed (no
// trackable requestId, or a reason that is not a string).
func cancelledID(params []byte) (string, bool) {
	raw, ok := lookupMember(params, "requestId")
	if !ok {
		return "", false
	}
	if reason, ok := lookupMember(params, "reason"); ok {
		if _, isString := decodeString(reason); !isString {
			return "", false
		}
	}
	return canonicalID(raw)
}

// heldIndex is the position of the held request with canonical id in
// c.held, or -1.
func (c *connection) heldIndex(id string) int {
	for i, ex := range c.held {
		if ex.id == id {
			return i
		}
	}
	return -1
}

// dropHeld removes c.held[i] without answering it.
func (c *connection) dropHeld(i int) {
	c.heldBytes -= c.held[i].job.size
	c.held = slices.Delete(c.held, i, i+1)
}

// releaseHeld submits the held messages in arrival order, now that no
// initialize is in flight, until one of them is an initialize again: the
// rest then wait for that one. A held array's members are admitted when it
// is released, in order with the rest: a request held after it whose id a
// member took is refused as a duplicate then.
func (c *connection) releaseHeld() error {
	for c.initializing == 0 && len(c.held) > 0 {
		ex := c.held[0]
		c.dropHeld(0)
		if raw, ok := c.heldArrays[ex]; ok {
			delete(c.heldArrays, ex)
			m := message{env: ex.env, size: ex.job.size, route: ex.route, header: ex.header, values: ex.job.ctx.values, hold: ex.job.hold, raw: raw}
			if c.acceptsBatch(m) {
				// Its members go first: those held again (behind an
				// initialize among them) before what arrived after it.
				rest := c.held
				c.held = nil
				err := c.onBatch(m)
				c.held = append(c.held, rest...)
				if err != nil {
					return err
				}
				continue
			}
		}
		if ex.id != "" && c.inFlight(ex.id) {
			// Its id was free when it arrived; a member of a batch
			// released before it took it.
			if err := c.refuseDuplicate(ex.route, ex.method, ex.id, ex.env.params, ex.job.ctx.values); err != nil {
				return err
			}
			continue
		}
		if err := c.submit(ex); err != nil {
			return err
		}
	}
	return nil
}

// holdFull reports whether the messages held behind an initialize reached
// their bound (linesBuffer messages or aheadBytes): the owner takes no more
// input until the initialize finishes.
func (c *connection) holdFull() bool {
	return len(c.held) >= linesBuffer || c.heldBytes >= aheadBytes
}
