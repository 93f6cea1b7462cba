package main

// Catalog changes and how they reach clients: what a ChangeSource reports,
// what a 2026 listen stream asked for, and the frames that announce them.

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
)

// ListenFilter is what a subscriptions/listen stream receives: the honoured
// subset of what the client asked for. Notifications is the JSON object sent
// back in the acknowledgement.
type ListenFilter struct {
	ToolsListChanged     bool
	PromptsListChanged   bool
	ResourcesListChanged bool
	ResourceURIs         []string
	TaskIDs              []string // tasks whose status changes the stream receives
	Notifications        json.RawMessage
}

// wants reports whether the stream asked for change.
func (f *ListenFilter) wants(change Change) bool {
	switch change.Kind {
	case ToolsChanged:
		return f.ToolsListChanged
	case PromptsChanged:
		return f.PromptsListChanged
	case ResourcesChanged:
		return f.ResourcesListChanged
	case ResourceUpdated:
		return slices.Contains(f.ResourceURIs, change.URI)
	case TaskStatus:
		return slices.Contains(f.TaskIDs, change.taskID)
	}
	return false
}

// ChangeKind says what changed in a server's catalog.
type ChangeKind uint8

const (
	ToolsChanged ChangeKind = iota + 1
	PromptsChanged
	ResourcesChanged
	ResourceUpdated // the contents of one resource, Change.URI
	// SubscriptionsEnded ends every open 2026 listen stream from the server
	// side: each gets its final {resultType:"complete"} response.
	SubscriptionsEnded
	// TaskStatus is a task's new state, for the 2026 listen streams that
	// named the task; the initialize era has no notification for it. Only
	// the Runtime reports it.
	TaskStatus
)

// Change is one event a ChangeSource reports.
type Change struct {
	Kind ChangeKind
	URI  string
	// taskID and taskParams describe a TaskStatus change: taskParams is the
	// params object of notifications/tasks without its closing brace, as
	// changeParamsPrefix returns it, so no stream copies it unless it sends.
	taskID     string
	taskParams string
}

// method is the notification that announces the change.
func (c Change) method() string {
	switch c.Kind {
	case ToolsChanged:
		return methodToolsListChanged
	case PromptsChanged:
		return methodPromptsListChanged
	case ResourcesChanged:
		return methodResourcesListChanged
	case TaskStatus:
		return notificationTasks
	}
	return methodResourcesUpdated
}

// A ChangeSource is a Dispatcher whose catalog changes while it serves. The
// transport watches it for the whole connection and forwards each change to
// the client: list_changed and resources/updated notifications in the
// initialize era, tagged notifications on 2026 subscriptions/listen streams.
type ChangeSource interface {
	// WatchChanges calls notify for every later change until stop is called.
	// notify may be called from any goroutine and must not block.
	WatchChanges(notify func(Change)) (stop func())
}

// subscriptionParams closes the params object prefix with the _meta that tags
// a listen stream's frames.
func subscriptionParams(prefix, id string) json.RawMessage {
	if prefix == "{" {
		return json.RawMessage(`{"_meta":{"` + metaKeySubscriptionID + `":` + id + `}}`)
	}
	return json.RawMessage(prefix + `,"_meta":{"` + metaKeySubscriptionID + `":` + id + `}}`)
}

// changeParamsPrefix returns the params of change's notification without
// their closing brace: "{" for a list change, `{"uri":…` for a resource
// update, `{"taskId":…` for a task's status; false when the URI cannot be
// encoded.
func changeParamsPrefix(change Change) (string, bool) {
	if change.Kind == TaskStatus {
		return change.taskParams, true
	}
	if change.Kind != ResourceUpdated {
		return "{", true
	}
	uri, err := marshalJSON(change.URI)
	if err != nil {
		return "", false
	}
	return `{"uri":` + string(uri), true
}

// legacyChangeFrame returns the initialize-era notification of change, whose
// params start with prefix (from changeParamsPrefix).
func legacyChangeFrame(change Change, prefix string) ([]byte, error) {
	if change.Kind == TaskStatus {
		return nil, errors.New("task status changes have no initialize-era notification")
	}
	var params json.RawMessage
	if prefix != "{" {
		params = json.RawMessage(prefix + "}")
	}
	return notificationFrame(change.method(), params)
}

// subscriptionEndFrame returns the final response that ends listen stream id
// from the server side; it carries the stream's subscriptionId.
func subscriptionEndFrame(id string) []byte {
	return resultFrame(id, json.RawMessage(`{"resultType":"complete","_meta":{"`+metaKeySubscriptionID+`":`+id+`}}`))
}

// changeBox collects a ChangeSource's changes for a connection's owner
// without ever blocking the source: changes queue under a lock and one signal
// wakes the owner, which takes them all at once. The lock guards only the
// queue, between the source's goroutines and the owner.
type changeBox struct {
	mu      sync.Mutex
	pending []Change
	signal  chan struct{} // capacity 1
}

func newChangeBox() *changeBox { return &changeBox{signal: make(chan struct{}, 1)} }

func (b *changeBox) put(c Change) {
	b.mu.Lock()
	b.pending = append(b.pending, c)
	b.mu.Unlock()
	b.wake()
}

// wake signals the box's owner without blocking; a signal already pending
// stands for this one too.
func (b *changeBox) wake() {
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

func (b *changeBox) take() []Change {
	b.mu.Lock()
	defer b.mu.Unlock()
	changes := b.pending
	b.pending = nil
	return changes
}
