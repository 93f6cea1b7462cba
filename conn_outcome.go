package main

// What the connection's owner does with a job's outcome: it settles the
// execution (its answer, or the error that replaces it), admits the answer
// against the byte budget, applies what the reply changes on the
// connection, and forgets the execution.

import (
	"errors"
	"maps"
	"slices"
)

// onOutcome settles the execution the outcome o is of. Outcomes are matched
// by execution reference, never by id: a cancelled id may name a newer
// request already, and the cancelled one was answered when it was cancelled.
func (c *connection) onOutcome(o jobOutcome) error {
	var ex *execution
	if o.key != "" {
		ex = c.byID.get(o.key)
	} else {
		ex = c.untracked[o.ref]
	}
	if ex == nil || ex.job.ref != o.ref {
		return nil
	}
	c.forget(ex)
	err := c.settle(ex, o)
	if ex.gates && err == nil {
		// The initialize's outcome is recorded (a success set the session
		// and header): what arrived behind it can select its dialect now.
		return c.releaseHeld()
	}
	return err
}

// settle records what the outcome o of ex changes on the connection and
// answers it.
func (c *connection) settle(ex *execution, o jobOutcome) error {
	switch o.kind {
	case outcomeCompleted:
		res := ex.result
		if ex.answerRefused || !ex.answerClaimed && !c.answerFits(ex, len(res.answer.frame)) {
			ex.endOperation(OperationEnd{Outcome: OperationRefused, ErrorCode: errCapacity.Code, ErrorMessage: errCapacity.Message, RefusedReason: "capacity"})
			return c.answer(ex.route, ex.errorAnswer(errCapacity))
		}
		if res.reply.Listen != nil {
			err := c.openSubscription(ex, res.reply.Listen) // a refusal ends the span as such
			ex.endAnswered(&res)
			return err
		}
		if res.reply.Subscribe != "" {
			if rpcErr := c.admitSubscribe(res.reply.Subscribe); rpcErr != nil {
				ex.endOperation(OperationEnd{Outcome: OperationAnswered, ErrorCode: rpcErr.Code, ErrorMessage: rpcErr.Message})
				return c.answer(ex.route, errorAnswer(ex.id, rpcErr))
			}
		}
		ex.endAnswered(&res)
		c.applyReply(res.reply)
		return c.answer(ex.route, res.answer)
	case outcomeTimedOut:
		ex.endOperation(OperationEnd{Outcome: OperationTimedOut, ErrorCode: errRequestTimedOut.Code, ErrorMessage: errRequestTimedOut.Message})
		c.log.Warn("mcpstdio: request timed out", "method", ex.method, "id", ex.id)
		return c.answer(ex.route, ex.errorAnswer(errRequestTimedOut))
	case outcomeRefused:
		ex.endOperation(OperationEnd{Outcome: OperationRefused, ErrorCode: errCapacity.Code, ErrorMessage: errCapacity.Message, RefusedReason: "capacity"})
		return c.answer(ex.route, ex.errorAnswer(errCapacity))
	case outcomeFailed:
		ex.endOperation(OperationEnd{Outcome: OperationFailed, ErrorCode: errWorkerFailed.Code, ErrorMessage: errWorkerFailed.Message})
		c.log.Error("mcpstdio: request worker failed", "method", ex.method, "id", ex.id, "panic", o.panicValue)
		return c.answer(ex.route, ex.errorAnswer(errWorkerFailed))
	}
	ex.endOperation(OperationEnd{Outcome: OperationCancelled})
	return c.answer(ex.route, noAnswer)
}

// answerFits admits the answer of n bytes that ex's handler built (n 0:
// none) without claiming it first (claimAnswer), as its message was
// admitted: it fits when its bytes fit in the
// executor's budget and the client's share beside what else is in flight,
// the message's own bytes excepted, or when nothing else is in flight. A
// message whose bytes a reservation holds (an HTTP body) has the answer's
// join them until the transport releases it, after the answer is written;
// otherwise (stdio) the frame is then bounded by the output's own bound. An
// answer that does not fit is not written: the request is answered with
// the overload error instead, and what the reply would have changed on the
// connection is not applied.
func (c *connection) answerFits(ex *execution, n int) bool {
	switch {
	case n == 0:
		return true
	case ex.job.hold != nil:
		return !errors.Is(ex.job.hold.grow(n), errOverloaded)
	}
	return c.submitter().client.fitsAnswer(n)
}

// claimAnswer is the execution's answerClaimer, called by its dispatcher on
// the worker: it admits n bytes of an answer about to be built as
// answerFits admits a built one, and counts them with the job's bytes (until
// its function returns; a reservation's until the transport releases it,
// after the answer is written). So an answer that does not fit is refused
// before it takes memory.
func (ex *execution) claimAnswer(n int) bool {
	if ex.inline { // on the owner, which admits it as a built answer
		ex.answerClaimed = ex.conn.answerFits(ex, n)
		ex.answerRefused = !ex.answerClaimed
		return ex.answerClaimed
	}
	if !ex.conn.sub.e.growJob(&ex.job, n) {
		ex.answerRefused = true
		return false
	}
	ex.answerClaimed = true
	return true
}

// applyReply records what a successful reply changes on the connection,
// before the reply is written, so every later message sees it.
func (c *connection) applyReply(r Reply) {
	if r.Initialized != nil {
		c.session = *r.Initialized
		c.header = map[string]string{headerProtocolVersion: r.Initialized.ProtocolVersion}
	}
	if r.LogLevel != "" {
		c.session.LogLevel = r.LogLevel
	}
	if r.Subscribe != "" {
		if c.resourceSub == nil {
			c.resourceSub = make(map[string]bool)
		}
		c.resourceSub[r.Subscribe] = true
	}
	if r.Unsubscribe != "" {
		delete(c.resourceSub, r.Unsubscribe)
	}
}

// forget drops a finished, cancelled or timed-out execution: its id is free
// and its server-to-client requests still waiting fail at once.
func (c *connection) forget(ex *execution) {
	ex.live = false
	ex.ended.Store(true)
	if ex.gates {
		c.initializing--
	}
	if ex.id != "" {
		c.byID.remove(ex.id)
	} else {
		delete(c.untracked, ex.job.ref)
	}
	for _, id := range ex.outgoing {
		if out, ok := c.outgoing[id]; ok {
			delete(c.outgoing, id)
			out.reply <- peerReply{err: ErrRequestEnded}
		}
	}
}

// onExecutorClosed answers every pending request -32603 "Request worker
// failed"; the connection cannot serve any more.
func (c *connection) onExecutorClosed() error {
	pending := slices.AppendSeq(slices.Collect(c.byID.all()), maps.Values(c.untracked))
	pending = append(pending, c.held...)
	c.log.Error("mcpstdio: executor closed with requests pending", "pending", len(pending))
	for _, ex := range pending {
		if err := c.answer(ex.route, ex.errorAnswer(errWorkerFailed)); err != nil {
			return err
		}
	}
	return nil
}
