package main

// The subscriptions of a connection (conn.go) and the catalog changes they
// carry: 2026 listen streams, initialize-era resources/subscribe URIs, and
// list_changed notifications; on its owner goroutine.

import (
	"encoding/json"
	"maps"
	"slices"
	"sync/atomic"
)

// subscription is an open 2026 subscriptions/listen stream.
type subscription struct {
	id     string // the listen request's canonical id, also its subscriptionId
	route  route
	filter *ListenFilter
}

// subscriptions counts what MaxSubscriptions bounds: open listen streams and
// URIs subscribed with resources/subscribe, in one budget, since both are
// state the connection keeps for the client until it lets go.
func (c *connection) subscriptions() int { return len(c.subs) + len(c.resourceSub) }

// admitSubscribe decides a successful resources/subscribe of uri here, where
// the count is known (the worker that answered could not know it): nil when
// uri is subscribed already (it does not count twice) or fits, otherwise the
// -32602 that is written instead of the dispatcher's success.
func (c *connection) admitSubscribe(uri string) *RPCError {
	if err := subscriptionURIError(uri); err != nil {
		return err
	}
	if c.resourceSub[uri] || c.subscriptions() < c.maxSubscriptions {
		return nil
	}
	return errSubscriptionLimit(c.maxSubscriptions)
}

// openSubscription turns the listen request ex into an open stream and
// acknowledges it, or refuses it over MaxSubscriptions (or the client's
// quota).
func (c *connection) openSubscription(ex *execution, filter *ListenFilter) error {
	if c.subscriptions() >= c.maxSubscriptions || c.listenQuota != nil && !c.listenQuota.take() {
		ex.endOperation(OperationEnd{Outcome: OperationAnswered, ErrorCode: errSubscriptionCapacity.Code, ErrorMessage: errSubscriptionCapacity.Message})
		return c.answer(ex.route, errorAnswer(ex.id, errSubscriptionCapacity))
	}
	if c.changes != nil {
		if err := c.onChanges(c.changes.take()); err != nil {
			return err
		}
	}
	s := &subscription{id: ex.id, route: ex.route, filter: filter}
	if c.inputEnded {
		c.releaseListen(s)
		return c.answer(ex.route, noAnswer) // it would be closed at once
	}
	if c.subs == nil {
		c.subs = make(map[string]*subscription)
	}
	c.subs[ex.id] = s
	params := filter.Notifications
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	frame, err := notificationFrame(methodSubscriptionsAcknowledged, subscriptionParams(`{"notifications":`+string(params), ex.id))
	if err != nil {
		return err
	}
	return c.send(ex.route, frame, nil)
}

// closeSubscription closes the listen stream id with final, its final
// response (nil: none, as after a cancel); its id is free again.
func (c *connection) closeSubscription(id string, final finalFrame) error {
	s := c.subs[id]
	delete(c.subs, id)
	c.releaseListen(s)
	return c.answer(s.route, final)
}

// listenCounter is a quota that admits every listen stream and counts the
// open ones, for a transport whose connection bounds them by
// MaxSubscriptions alone (stdio): Transport.ListenStreams reads it.
type listenCounter struct{ open atomic.Int64 }

func (l *listenCounter) take() bool { l.open.Add(1); return true }
func (l *listenCounter) release()   { l.open.Add(-1) }

// releaseListen gives a closed listen stream's place back to the client's
// quota.
func (c *connection) releaseListen(*subscription) {
	if c.listenQuota != nil {
		c.listenQuota.release()
	}
}

// onChanges forwards catalog changes: in the initialize era as list_changed
// and resources/updated notifications, on 2026 listen streams as tagged
// notifications to the streams that asked for them.
func (c *connection) onChanges(changes []Change) error {
	for _, change := range changes {
		if err := c.forwardChange(change); err != nil {
			return err
		}
	}
	return nil
}

func (c *connection) forwardChange(change Change) error {
	if change.Kind == SubscriptionsEnded {
		for _, id := range slices.Sorted(maps.Keys(c.subs)) {
			if err := c.closeSubscription(id, finalFrame{frame: subscriptionEndFrame(id)}); err != nil {
				return err
			}
		}
		return nil
	}
	prefix, ok := changeParamsPrefix(change)
	if !ok {
		return nil
	}
	legacy := c.session.ProtocolVersion != "" && (change.Kind != ResourceUpdated || c.resourceSub[change.URI])
	if legacy {
		if frame, err := legacyChangeFrame(change, prefix); err == nil {
			if err := c.send(nil, frame, nil); err != nil {
				return err
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.subs)) {
		s := c.subs[id]
		if !s.filter.wants(change) {
			continue
		}
		frame, err := notificationFrame(change.method(), subscriptionParams(prefix, id))
		if err != nil {
			continue
		}
		if err := c.send(s.route, frame, nil); err != nil {
			return err
		}
	}
	return nil
}
