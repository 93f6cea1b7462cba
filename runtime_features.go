package main

// How a feature (an extension such as skills, in files of its own) plugs
// into a Runtime: the methods it serves, the extension it declares in
// capabilities.extensions, and the resources it adds or removes as one
// change. The core calls what is registered here and names no feature.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
)

// featureMethod serves one method a feature registered with addMethod. It is
// called from Dispatch after dialect selection, as the runtime's own methods
// are, and must honour ctx. It gets a copy of the call: a pointer passed to a
// function value would make every call's methodCall escape to the heap, the
// runtime's own methods included.
type featureMethod func(ctx context.Context, c methodCall) Reply

// features holds what features registered. Its mutex guards only it.
type features struct {
	mu         sync.RWMutex
	methods    map[string]featureMethod
	extensions map[string]json.RawMessage // settings objects by extension id
}

// isCoreMethod reports whether method is one of the base protocol's, which
// the Runtime serves itself, so that no feature may take it. (A method of
// another feature is refused by addMethod once that feature registered it.)
func isCoreMethod(method string) bool {
	switch method {
	case methodInitialize, methodPing, methodServerDiscover, methodSubscriptionsListen, methodLoggingSetLevel,
		methodResourcesSubscribe, methodResourcesUnsubscribe, methodToolsList, methodToolsCall, methodResourcesList,
		methodResourcesTemplatesList, methodResourcesRead, methodPromptsList, methodPromptsGet, methodCompletionComplete:
		return true
	}
	return false
}

// addMethod makes the Runtime serve method with h. It fails for a method the
// Runtime serves itself or another feature registered.
func (rt *Runtime) addMethod(method string, h featureMethod) error {
	if method == "" || h == nil {
		return errors.New("a feature method needs a name and a handler")
	}
	if isCoreMethod(method) || rt.tasks != nil && rt.tasks.serves(method) {
		return fmt.Errorf("method %q is served by the runtime itself", method)
	}
	f := &rt.features
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, taken := f.methods[method]; taken {
		return fmt.Errorf("method %q is registered already", method)
	}
	if f.methods == nil {
		f.methods = map[string]featureMethod{}
	}
	f.methods[method] = h
	return nil
}

// featureMethodFor returns the handler a feature registered for method, nil
// when there is none.
func (rt *Runtime) featureMethodFor(method string) featureMethod {
	f := &rt.features
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.methods[method]
}

// declareExtension advertises extension id in capabilities.extensions with
// settings, a JSON object, from now on; nil settings withdraw it.
func (rt *Runtime) declareExtension(id string, settings json.RawMessage) {
	f := &rt.features
	f.mu.Lock()
	defer f.mu.Unlock()
	if settings == nil {
		delete(f.extensions, id)
		return
	}
	if f.extensions == nil {
		f.extensions = map[string]json.RawMessage{}
	}
	f.extensions[id] = settings
}

// declaredExtensions returns a copy of the extensions features declare.
func (rt *Runtime) declaredExtensions() map[string]json.RawMessage {
	f := &rt.features
	f.mu.RLock()
	defer f.mu.RUnlock()
	return maps.Clone(f.extensions)
}

// changeResources removes the static resources of the URIs in remove and
// adds those of add, each served by its handler, as one change of the
// catalog: resources/list changes once and one list_changed is announced
// (when anything changed). An add whose URI is registered already, and is
// not removed here, is left out and reported in the error; the others are
// applied.
func (rt *Runtime) changeResources(remove []string, add []Resource, handlers []ResourceHandler) error {
	var errs []error
	changed := false
	rt.mu.Lock()
	for _, uri := range remove {
		changed = rt.cat.resources.remove(uri) || changed
	}
	for i, r := range add {
		if err := checkResourceFields(r.URI, r.Name, r.Meta, handlers[i]); err != nil {
			errs = append(errs, fmt.Errorf("adding resource %q: %w", r.URI, err))
			continue
		}
		if !rt.cat.resources.add(r.URI, &resourceEntry{resource: r, handler: handlers[i]}) {
			errs = append(errs, fmt.Errorf("adding resource %q: a resource with that URI is already registered", r.URI))
			continue
		}
		changed = true
	}
	rt.mu.Unlock()
	rt.announceIf(changed, ResourcesChanged)
	return errors.Join(errs...)
}
