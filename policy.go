package main

import "errors"

// An AccessPolicy decides what a principal may see and use of a Runtime's
// catalog (RuntimeOptions.Policy). It returns nil to allow item to p, and
// an error to refuse it. p is nil for a request that carries no principal
// (stdio, or HTTP without authorization).
//
// Where it applies:
//   - tools/list, prompts/list, resources/list and resources/templates/list
//     leave out every item it refuses. Filtering happens before paging, and
//     cursors are bound to the principal, so a cursor never pages another
//     principal's list.
//   - tools/call, prompts/get, resources/read, completion/complete and
//     resources/subscribe of a refused item fail with its error, before the
//     arguments are checked and before any handler runs: an *RPCError is
//     answered as is, any other error -32003 "Access denied" (its text is
//     never sent). A subscriptions/listen request's resourceSubscriptions
//     are checked as reads: a refused URI is left out of what is honoured.
//
// It runs once per listed item and per call, concurrently: keep it cheap and
// safe for concurrent use. It must not call back into the Runtime's
// registration methods.
type AccessPolicy func(p *Principal, item CatalogItem) error

// CatalogItem is what an AccessPolicy decides on.
type CatalogItem struct {
	Kind ItemKind
	// Name is the item's name (a tool's, prompt's, resource's or resource
	// template's).
	Name string
	// URI is the resource's URI, or the resource template's URI template.
	URI string
	// RequestedURI is the concrete URI a resources/read or a subscription
	// names; "" when listing, and for tools and prompts.
	RequestedURI string
}

// ItemKind says what a CatalogItem is.
type ItemKind uint8

const (
	ItemTool ItemKind = iota + 1
	ItemPrompt
	ItemResource
	ItemResourceTemplate
)

// CodeAccessDenied is the JSON-RPC error code of a call an AccessPolicy
// refused with an error that is not an *RPCError (implementation-defined
// range, JSON-RPC 2.0 §5.1).
const CodeAccessDenied = -32003

// checkAccess asks the policy about item for c's principal: nil when
// allowed (or when there is no policy), else the error to answer.
func (rt *Runtime) checkAccess(c *methodCall, item CatalogItem) *RPCError {
	if rt.policy == nil {
		return nil
	}
	err := rt.policy(c.principal, item)
	if err == nil {
		return nil
	}
	if rerr, ok := errors.AsType[*RPCError](err); ok {
		return rerr
	}
	rt.logger.DebugContext(c.ctx, "access denied", "method", c.req.Method, "principal", principalBinding(c.principal), "name", item.Name, "uri", item.URI, "err", err)
	return &RPCError{Code: CodeAccessDenied, Message: "Access denied"}
}

func (e *toolEntry) item() CatalogItem { return CatalogItem{Kind: ItemTool, Name: e.tool.Name} }

func (e *promptEntry) item() CatalogItem { return CatalogItem{Kind: ItemPrompt, Name: e.prompt.Name} }

func (e *resourceEntry) item() CatalogItem {
	return CatalogItem{Kind: ItemResource, Name: e.resource.Name, URI: e.resource.URI}
}

func (e *templateEntry) item() CatalogItem {
	return CatalogItem{Kind: ItemResourceTemplate, Name: e.template.Name, URI: e.template.URITemplate}
}

// visible reports whether the policy lets c's principal see item in a list.
func (rt *Runtime) visible(c *methodCall, item CatalogItem) bool {
	return rt.policy == nil || rt.policy(c.principal, item) == nil
}
