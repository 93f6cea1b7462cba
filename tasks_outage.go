package main

import (
	"context"
	"errors"
	"time"
)

// What a task does when its store fails (a shared database down or slow):
// the handler never sees the store's own error text, and the task's end is
// retried until it is stored, so that an acknowledged task keeps its result.

// errTaskStoreFailed stands for a store's own error where it would reach a
// handler (which may return it to the client as its result): the store's
// text may name a database, a host, a user; it is logged instead.
var errTaskStoreFailed = errors.New("the server's task store failed")

// storeFailure returns err, task id's store error, fit for its handler
// (whose context is ctx): the errors of the contract and of the handler's
// context as they are, any other logged and replaced by errTaskStoreFailed.
func (m *taskManager) storeFailure(ctx context.Context, id string, err error) error {
	if errors.Is(err, ErrTaskNotFound) || errors.Is(err, ErrTaskLimit) || errors.Is(err, errTaskOver) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if _, ok := errors.AsType[*RPCError](err); ok {
		return err
	}
	m.logger.ErrorContext(ctx, "the task store failed", "task", id, "err", err)
	return errTaskStoreFailed
}

// Backoff of retryEnd: the first retry after taskEndRetryFirst, doubling up
// to taskEndRetryMax.
const (
	taskEndRetryFirst = 100 * time.Millisecond
	taskEndRetryMax   = 5 * time.Second
)

// retryEnd runs store, which stores task t's end, until it succeeds or
// fails for a reason a retry cannot change (the task is gone, a limit), or
// the task's TTL passes: a shared store that is down for a while (a
// database restarting) must not lose an acknowledged task's result. The
// handler's watch, and with it a shared store's lease, lasts until then.
func (m *taskManager) retryEnd(t *taskRun, store func() error) error {
	wait := taskEndRetryFirst
	for {
		err := store()
		if err == nil || errors.Is(err, ErrTaskNotFound) || errors.Is(err, ErrTaskLimit) {
			return err
		}
		left := t.rec.expiresAt().Sub(m.now())
		if left <= 0 {
			return err
		}
		m.logger.WarnContext(t.reqCtx, "storing a task's end failed; retrying", "task", t.rec.ID, "err", err, "in", wait)
		timer := time.NewTimer(min(wait, left))
		<-timer.C
		wait = min(2*wait, taskEndRetryMax)
	}
}
