package main

// How a feature (an extension such as skills, in files of its own) plugs
// into a Runtime: the methods it serves, the extension it declares in
// capabilities.extensions, the resources it adds or removes as one change,
// and its rules for the tools AddTool registers. The core calls what is
// registered here and names no feature.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// featureMethod serves one method a feature registered with addMethod. It is
// called from Dispatch after dialect selection, as the runtime's own methods
// are, and must honour ctx. It gets a copy of the call: a pointer passed to a
// function value would make every call's methodCall escape to the heap, the
// runtime's own methods included.
type featureMethod func(ctx context.Context, c methodCall) Reply

// toolCheck is a feature's rule for the tools AddTool registers
// (setToolCheck). AddTool calls it with the catalog locked for writing
// (Runtime.mu held), so that what it reads of the catalog cannot change
// before the tool is in it, and with the tool as it will be registered: the
// check may amend the tool (its slices are AddTool's own copies, shared with
// nobody yet). An error refuses the tool. It must not call the Runtime's
// methods, which take that lock.
type toolCheck func(tool *Tool) error

// features holds what features registered. Its mutex guards only it; a
// goroutine that holds Runtime.mu may take it, never the other way round.
type features struct {
	mu         sync.RWMutex
	methods    map[string]featureMethod
	extensions map[string]json.RawMessage // settings objects by extension id
	toolChecks map[string]toolCheck       // by the id of the extension that set each
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

// setToolCheck makes AddTool run check on every tool it registers from now
// on, as the rule of extension id; a later call for the same id replaces it.
func (rt *Runtime) setToolCheck(id string, check toolCheck) {
	f := &rt.features
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.toolChecks == nil {
		f.toolChecks = map[string]toolCheck{}
	}
	f.toolChecks[id] = check
}

// checkTool runs the features' tool checks on tool, in the order of their
// extension ids, and returns the first error. The caller holds rt.mu.
func (rt *Runtime) checkTool(tool *Tool) error {
	f := &rt.features
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, id := range slices.Sorted(maps.Keys(f.toolChecks)) {
		if err := f.toolChecks[id](tool); err != nil {
			return err
		}
	}
	return nil
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
