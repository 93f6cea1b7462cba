package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Limits of progress reporting (SPEC §9.1).
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

// progressState is a request's progress so far, guarded by its mutex; a
// report holds it until its line is written, so one is outstanding at most.
type progressState struct {
	mu    sync.Mutex
	count int
	last  float64
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
	if !r.progress.mu.TryLock() {
		return ErrProgressOutstanding
	}
	defer r.progress.mu.Unlock()
	switch {
	case r.progress.count >= maxProgressReports:
		return fmt.Errorf("mcpstdio: a request sends at most %d progress reports", maxProgressReports)
	case r.progress.count > 0 && p.Progress <= r.progress.last:
		return fmt.Errorf("mcpstdio: progress %v does not increase on %v", p.Progress, r.progress.last)
	case r.peer == nil:
		return ErrNoClient
	}
	if d := dialectOf(r.ProtocolVersion); d.known && !d.progressMessage {
		p.Message = ""
	}
	params, err := marshalJSON(progressParams{ProgressToken: r.progressToken, Progress: p.Progress, Total: p.Total, Message: p.Message})
	if err != nil {
		return err
	}
	if err := r.peer.Notify(ctx, methodProgress, params); err != nil {
		return err
	}
	r.progress.count++
	r.progress.last = p.Progress
	return nil
}
