package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// protocolNotifications are the notification methods MCP defines; the
// application may not send them through Notify, because the transport and
// runtime own their meaning.
var protocolNotifications = []string{
	methodCancelled,
	methodProgress,
	methodMessage,
	methodInitialized,
	methodResourcesUpdated,
	methodResourcesListChanged,
	methodToolsListChanged,
	methodPromptsListChanged,
	methodRootsListChanged,
	methodSubscriptionsAcknowledged,
	methodElicitationComplete,
	notificationTasks,
}

// reservedNotificationPrefix is reserved by the tasks extension.
const reservedNotificationPrefix = notificationTasks + "/"

func validateNotificationMethods(methods []string) error {
	for _, m := range methods {
		if !strings.HasPrefix(m, "notifications/") || len(m) == len("notifications/") {
			return fmt.Errorf("mcpstdio: notification method %q must start with \"notifications/\"", m)
		}
		if slices.Contains(protocolNotifications, m) || strings.HasPrefix(m, reservedNotificationPrefix) {
			return fmt.Errorf("mcpstdio: notification method %q is defined by the protocol and cannot be sent by the application", m)
		}
	}
	return nil
}

// ErrTransportDown is matched (errors.Is) by the error Notify returns when the
// transport stopped abnormally while the call waited for its turn.
var ErrTransportDown = errors.New("mcpstdio: transport down")

// ErrInvalidNotification is matched (errors.Is) by the error Notify returns for
// a method that is not allowed or params that are not a JSON object; nothing
// is written.
var ErrInvalidNotification = errors.New("mcpstdio: invalid notification")

// Notify sends the server-to-client notification method with params (any
// value that encodes to a JSON object, or nil) on the open connection. It is
// safe for concurrent use; calls are written one at a time through the same
// deadline-bound path as responses, so frames never interleave. Nothing is
// queued or retried.
//
// Notify blocks until its own frame is written. It returns nil when written, or:
//   - an error matching ErrInvalidNotification, when method is not listed in
//     Options.NotificationMethods or params is not an object: nothing written;
//   - ErrClosed, when Serve has not started or has returned normally: nothing
//     written. While Serve drains after end of input, Notify still writes;
//   - an error matching ErrTransportDown, when Serve returned with an error
//     while the call waited for its turn (nothing written), or while its
//     frame waited for its write or was being written (part of it may have
//     been written): every call the transport took gets exactly one reply;
//   - an *OutputError, when this write failed or timed out, which is terminal
//     for the connection: part of the frame may have been written;
//   - ctx.Err(), when ctx ended first. If the coordinator had not taken the
//     call yet, nothing is written; once it took it (at once, or when the
//     write it makes itself returns, within WriteTimeout; the frame then
//     waits for the next write), the frame may still be written
//     afterwards: treat the outcome as unknown.
func (t *Transport) Notify(ctx context.Context, method string, params any) error {
	frame, err := t.notificationFrame(method, params)
	if err != nil {
		return err
	}
	if !t.isServing() {
		return ErrClosed
	}
	call := &peerCall{frame: frame, reply: make(chan peerReply, 1)}
	select {
	case t.calls <- call:
	case <-t.done:
		return t.downError()
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case r := <-call.reply:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	case <-t.done:
		// Serve replied to every call it took before it returned.
		return (<-call.reply).err
	}
}

func (t *Transport) notificationFrame(method string, params any) ([]byte, error) {
	if !slices.Contains(t.opts.NotificationMethods, method) {
		return nil, fmt.Errorf("%w: method %q is not in Options.NotificationMethods", ErrInvalidNotification, method)
	}
	var raw json.RawMessage
	if params != nil {
		b, err := marshalJSON(params)
		if err != nil {
			return nil, fmt.Errorf("%w: params: %v", ErrInvalidNotification, err)
		}
		if len(b) == 0 || b[0] != '{' {
			return nil, fmt.Errorf("%w: params must encode to a JSON object", ErrInvalidNotification)
		}
		raw = b
	}
	return notificationFrame(method, raw)
}

// isServing reports whether Serve has started and not returned.
func (t *Transport) isServing() bool {
	select {
	case <-t.done:
		return false
	default:
	}
	select {
	case <-t.started:
		return true
	default:
		return false
	}
}

// downError is Notify's error for a call that found Serve returned.
func (t *Transport) downError() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.serveErr == nil {
		return ErrClosed
	}
	return fmt.Errorf("%w: %w", ErrTransportDown, t.serveErr)
}
