package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Limits of progress reporting (docs/explanation/contract.md, "Progress").
const (
	maxProgressReports = 1000
	maxProgressMessage = 4096
)

// Progress is one progress report. Total is 0 when unknown.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

// progressState is a request's progress so far. Its mutex guards the three
// fields between the handler's goroutines (a handler may report from
// several): each report takes it twice, briefly, to claim the request's one
// outstanding report and check the value, then to record what was written;
// it is never held while the report is written (peer.Notify waits for the
// connection's owner and the output). A mutex rather than atomics because
// the check and the claim must see count, last and outstanding together.
type progressState struct {
	mu          sync.Mutex
	outstanding bool // a report was claimed and is being written
	count       int  // reports written
	last        float64
}

// claim checks p against the reports written so far and claims the
// request's one outstanding report; release must follow.
func (s *progressState) claim(p float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.outstanding:
		return ErrProgressOutstanding
	case s.count >= maxProgressReports:
		return fmt.Errorf("mcpstdio: a request sends at most %d progress reports", maxProgressReports)
	case s.count > 0 && p <= s.last:
		return fmt.Errorf("mcpstdio: progress %v does not increase on %v", p, s.last)
	}
	s.outstanding = true
	return nil
}

// release ends the outstanding report, recording p when it was written.
func (s *progressState) release(p float64, written bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outstanding = false
	if written {
		s.count++
		s.last = p
	}
}

// ErrProgressOutstanding is returned by ReportProgress when another report of
// the same request has not been written yet.
var ErrProgressOutstanding = errors.New("mcpstdio: a progress report of this request is still being written")

type progressParams struct {
	ProgressToken any     `json:"progressToken"`
	Progress      float64 `json:"progress"`
	Total         float64 `json:"total,omitempty"`
	Message       string  `json:"message,omitempty"`
}

// ReportProgress sends notifications/progress for the request when the
// client asked for it with _meta.progressToken; otherwise it does nothing and
// returns nil. Values must increase strictly from one report to the next, a
// request sends at most 1000 reports, and a message is at most 4096 bytes
// (sent from protocol version 2025-03-26 on; 2024-11-05 has no message).
// It returns after the line is written (backpressure), fails with
// ErrProgressOutstanding while another report of the request is being
// written, and fails once the request has been answered or cancelled. In a
// call that became a task nothing is sent: a non-empty message becomes the
// task's statusMessage.
func (r *HandlerRequest) ReportProgress(ctx context.Context, p Progress) error {
	if r.task != nil && r.task.isTask() {
		return r.task.setStatusMessage(ctx, p.Message)
	}
	if r.progressToken == nil {
		return nil
	}
	if len(p.Message) > maxProgressMessage {
		return fmt.Errorf("mcpstdio: progress message of %d bytes exceeds %d", len(p.Message), maxProgressMessage)
	}
	if r.peer == nil {
		return ErrNoClient
	}
	if err := r.progress.claim(p.Progress); err != nil {
		return err
	}
	err := r.sendProgress(ctx, p)
	r.progress.release(p.Progress, err == nil)
	return err
}

// sendProgress writes the report p of a request that asked for progress.
func (r *HandlerRequest) sendProgress(ctx context.Context, p Progress) error {
	if d := dialectOf(r.ProtocolVersion); d.known && !d.progressMessage {
		p.Message = ""
	}
	params, err := marshalJSON(progressParams{ProgressToken: r.progressToken, Progress: p.Progress, Total: p.Total, Message: p.Message})
	if err != nil {
		return err
	}
	return r.peer.Notify(ctx, methodProgress, params)
}
