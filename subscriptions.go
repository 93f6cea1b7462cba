package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Limits of subscriptions (docs/explanation/contract.md, "Subscriptions"). How
// many subscriptions a connection holds is Options.MaxSubscriptions, enforced
// by the coordinator.
const (
	// maxListenResources is how many URIs one subscriptions/listen request
	// may name.
	maxListenResources = 1000
	// maxSubscriptionURIBytes is the length of any URI a connection
	// subscribes to, with resources/subscribe or in a listen request's
	// resourceSubscriptions: what the connection keeps per subscription
	// stays small whatever the line limit.
	maxSubscriptionURIBytes = 1000
)

// subscriptionURIError is the -32602 refusing uri as a subscription's URI,
// or nil when uri is within maxSubscriptionURIBytes.
func subscriptionURIError(uri string) *RPCError {
	if len(uri) <= maxSubscriptionURIBytes {
		return nil
	}
	return invalidParams(fmt.Sprintf("URI exceeds the %d-byte limit", maxSubscriptionURIBytes))
}

// errSubscriptionLimit is the -32602 refusing a resources/subscribe of a new
// URI on a connection that holds limit subscriptions already.
func errSubscriptionLimit(limit int) *RPCError {
	return invalidParams(fmt.Sprintf("Subscription limit reached (%d)", limit))
}

// changeWatchers are the callbacks of WatchChanges. The mutex guards the
// list, which is never changed in place: WatchChanges and stop replace it,
// so that emit takes it under the lock and calls the callbacks with no lock
// held. A lock fits: the list changes rarely, once per connection or
// session, and is read once per announced change, never on a request's
// path. Calling out under it would deadlock a callback that touches the
// catalog or the watchers, and would put every transport's own locks under
// this one.
type changeWatchers struct {
	mu   sync.Mutex
	next int
	list []changeWatcher // guarded by mu; replaced, never modified
}

type changeWatcher struct {
	id     int
	notify func(Change)
}

// WatchChanges implements ChangeSource: notify is called for every catalog
// change announced from now on (list changes when the runtime advertises
// listChanged for that kind, resource updates, task status changes) until
// stop is called. It is called with no lock of the runtime held, so it may
// use the runtime; it must not block, since it runs on the goroutine that
// announced the change. A change announced while stop runs may still reach
// notify once stop has returned.
func (rt *Runtime) WatchChanges(notify func(Change)) (stop func()) {
	w := &rt.watchers
	w.mu.Lock()
	defer w.mu.Unlock()
	id := w.next
	w.next++
	w.list = append(slices.Clip(w.list), changeWatcher{id: id, notify: notify})
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.list = slices.DeleteFunc(slices.Clone(w.list), func(cw changeWatcher) bool { return cw.id == id })
	}
}

// emit calls every watcher with c, with no lock held.
func (rt *Runtime) emit(c Change) {
	rt.watchers.mu.Lock()
	list := rt.watchers.list
	rt.watchers.mu.Unlock()
	for _, w := range list {
		w.notify(c)
	}
}

// AnnounceListChanged tells every connection that a list of the catalog
// changed, as adding or removing an entry does: kind is ToolsChanged,
// PromptsChanged or ResourcesChanged. Nothing is sent for a kind whose
// listChanged the runtime does not advertise. Safe to call from any goroutine.
func (rt *Runtime) AnnounceListChanged(kind ChangeKind) {
	var l listKind
	switch kind {
	case ToolsChanged:
		l = listTools
	case PromptsChanged:
		l = listPrompts
	case ResourcesChanged:
		l = listResources
	default:
		return
	}
	if rt.listChanged[l] {
		rt.emit(Change{Kind: kind})
	}
}

// EndSubscriptions ends, from the server side, every open 2026
// subscriptions/listen stream of every connection: each gets its final
// {"resultType":"complete"} response and its id is free again. Safe to call
// from any goroutine.
func (rt *Runtime) EndSubscriptions() {
	rt.emit(Change{Kind: SubscriptionsEnded})
}

// announceIf announces kind when changed is true, and returns changed.
func (rt *Runtime) announceIf(changed bool, kind ChangeKind) bool {
	if changed {
		rt.AnnounceListChanged(kind)
	}
	return changed
}

// NotifyResourceUpdated tells every connection subscribed to uri that the
// resource changed: notifications/resources/updated in the initialize era,
// on listen streams that named it in 2026. Safe to call from any goroutine.
func (rt *Runtime) NotifyResourceUpdated(uri string) {
	rt.emit(Change{Kind: ResourceUpdated, URI: uri})
}

// subscribeResource answers resources/subscribe and resources/unsubscribe
// (initialize era): the transport keeps the connection's set of URIs, and
// refuses a subscription over its limit (see coordinator.admitSubscribe).
func (rt *Runtime) subscribeResource(c *methodCall, subscribe bool) Reply {
	uri, ok := decodeString(c.params.uri)
	if !ok || uri == "" {
		return Reply{Error: invalidParams("Invalid params: " + c.req.Method + " requires a string uri")}
	}
	if subscribe {
		if err := subscriptionURIError(uri); err != nil {
			return Reply{Error: err}
		}
		handler, _, item := rt.findResource(uri)
		if handler == nil {
			return Reply{Error: resourceNotFound(c, uri)}
		}
		if rerr := rt.checkAccess(c, item); rerr != nil {
			return Reply{Error: rerr}
		}
		return Reply{Result: json.RawMessage(`{}`), Subscribe: uri}
	}
	return Reply{Result: json.RawMessage(`{}`), Unsubscribe: uri}
}

// listenRequest is what a subscriptions/listen request asks for.
type listenRequest struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs (the tasks extension) asks for notifications/tasks of these
	// tasks; the request must declare the extension.
	TaskIDs []string `json:"taskIds,omitempty"`
}

// decodeListenRequest reads the notifications object of a
// subscriptions/listen request; a member of another type (null is taken as
// absent) is refused with a message naming it.
func decodeListenRequest(raw json.RawMessage) (listenRequest, *RPCError) {
	var asked listenRequest
	for _, opt := range []struct {
		name string
		dst  *bool
	}{
		{"toolsListChanged", &asked.ToolsListChanged},
		{"promptsListChanged", &asked.PromptsListChanged},
		{"resourcesListChanged", &asked.ResourcesListChanged},
	} {
		switch v, _ := lookupMember(raw, opt.name); string(v) {
		case "", "null", "false":
		case "true":
			*opt.dst = true
		default:
			return listenRequest{}, invalidParams("Invalid params: notifications." + opt.name + " must be a boolean")
		}
	}
	for _, list := range []struct {
		name string
		dst  *[]string
	}{
		{"resourceSubscriptions", &asked.ResourceSubscriptions},
		{"taskIds", &asked.TaskIDs},
	} {
		if v, ok := lookupMember(raw, list.name); ok && json.Unmarshal(v, list.dst) != nil {
			return listenRequest{}, invalidParams("Invalid params: notifications." + list.name + " must be an array of strings")
		}
	}
	return asked, nil
}

// listen answers subscriptions/listen (2026): the honoured subset of what
// was asked, which the transport acknowledges and then serves.
func (rt *Runtime) listen(ctx context.Context, c *methodCall) Reply {
	raw, ok := c.params.lookup("notifications")
	if !ok || !isJSONObject(raw) {
		return Reply{Error: invalidParams("Invalid params: subscriptions/listen requires a notifications object")}
	}
	asked, rerr := decodeListenRequest(raw)
	if rerr != nil {
		return Reply{Error: rerr}
	}
	if len(asked.ResourceSubscriptions) > maxListenResources {
		return Reply{Error: invalidParams(fmt.Sprintf("Invalid params: at most %d resourceSubscriptions", maxListenResources))}
	}
	for _, uri := range asked.ResourceSubscriptions {
		if err := subscriptionURIError(uri); err != nil {
			return Reply{Error: err}
		}
	}
	if len(asked.TaskIDs) > maxListenResources {
		return Reply{Error: invalidParams(fmt.Sprintf("Invalid params: at most %d taskIds", maxListenResources))}
	}
	var tasks []string
	if len(asked.TaskIDs) > 0 && rt.tasks != nil {
		name := rt.tasks.extensionName()
		if !declaresExtension(c, name) {
			return Reply{Error: extensionNotDeclared(name)}
		}
		tasks = rt.tasks.listenable(ctx, *c, asked.TaskIDs)
	}
	caps := rt.capabilities()
	honoured := listenRequest{
		ToolsListChanged:     asked.ToolsListChanged && caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   asked.PromptsListChanged && caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: asked.ResourcesListChanged && caps.Resources != nil && caps.Resources.ListChanged,
	}
	if caps.Resources != nil && caps.Resources.Subscribe {
		for _, uri := range asked.ResourceSubscriptions {
			if handler, _, item := rt.findResource(uri); handler != nil && rt.visible(c, item) {
				honoured.ResourceSubscriptions = append(honoured.ResourceSubscriptions, uri)
			}
		}
	}
	honoured.TaskIDs = tasks
	ack, err := marshalJSON(honoured)
	if err != nil {
		return Reply{Error: internalError()}
	}
	return Reply{Listen: &ListenFilter{
		ToolsListChanged:     honoured.ToolsListChanged,
		PromptsListChanged:   honoured.PromptsListChanged,
		ResourcesListChanged: honoured.ResourcesListChanged,
		ResourceURIs:         honoured.ResourceSubscriptions,
		TaskIDs:              honoured.TaskIDs,
		Notifications:        ack,
	}}
}
