package main

import (
	"context"
	"fmt"
	"reflect"
)

// TypedToolHandler runs a typed tool: in holds the arguments, bound and
// checked against the tool's input schema; the Out it returns is the
// structured result. Errors mean what they mean for a ToolHandler.
type TypedToolHandler[In, Out any] func(ctx context.Context, req *HandlerRequest, in In) (Out, error)

// AddTypedTool registers a tool whose arguments are an In and whose result is
// an Out. The schemas and the plans to bind In and encode Out are worked out
// here, once.
//
// In must be a struct or a pointer to one; Out a struct, a pointer to one or
// a map with string keys (MCP requires an object). Unless tool sets them,
// inputSchema and outputSchema are inferred from In and Out (JSON Schema
// 2020-12): struct fields by their json names, a field's
// `jsonschema` tag as its description, required unless tagged omitempty or
// omitzero. additionalProperties is left unset in both, so a client that
// sends members In lacks is still served (they are ignored). A schema tool
// sets is sent verbatim; for the input, its "required" list is then what is
// enforced, while the types are still In's. AddTypedTool fails, besides for
// AddTool's reasons, for a type with no JSON form (channels, functions,
// complex numbers, interfaces with methods, maps with non-string keys), a
// recursive type, or a nil handler.
//
// On each call the arguments are checked against In and bound in one pass,
// by exact key (see HandlerRequest.Bind): wrong JSON types, integers out of
// the Go type's range, null where the schema allows none and, with an
// inferred schema, required members missing at any depth are refused with a
// result with isError true whose text names the argument, never with a
// JSON-RPC error. The result is Out, encoded as encoding/json encodes a
// pointer to it, as structuredContent and, as MCP recommends for older
// clients, one text block: Out's String() when Out (or *Out) implements
// fmt.Stringer, else the JSON text of the structured content. A nil pointer
// Out, or one that fails to encode (a NaN float), is a server error,
// answered -32603. Errors the handler returns mean what they mean for a
// ToolHandler.
func AddTypedTool[In, Out any](rt *Runtime, tool Tool, handler TypedToolHandler[In, Out]) error {
	if handler == nil {
		return fmt.Errorf("adding tool %q: nil handler", tool.Name)
	}
	t, err := newTypedTool(rt, &tool, reflect.TypeFor[In](), reflect.TypeFor[Out]())
	if err != nil {
		return fmt.Errorf("adding tool %q: %w", tool.Name, err)
	}
	return rt.AddTool(tool, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		// One allocation holds the arguments, the result and what the
		// result's encoding needs.
		call := new(struct {
			in  In
			out Out
			res typedResult
		})
		b := t.binder
		b.validated = req.argumentsValidated()
		if err := req.bindValue(req.Arguments, reflect.ValueOf(&call.in).Elem(), t.in, b); err != nil {
			return nil, err
		}
		out, err := handler(ctx, req, call.in)
		if err != nil {
			return nil, err
		}
		call.out = out
		var text fmt.Stringer
		if t.outPointer {
			text, _ = any(call.out).(fmt.Stringer)
		} else {
			text, _ = any(&call.out).(fmt.Stringer)
		}
		return t.result(req, &call.res, reflect.ValueOf(&call.out).Elem(), text)
	})
}

// typedTool is what AddTypedTool works out once for a tool: the plans of In
// and Out. Read-only after registration.
type typedTool struct {
	in, out    *typePlan
	binder     binder
	outPointer bool // Out is a pointer: its method set is Out's, not *Out's
}

// newTypedTool checks In and Out and fills in the schemas tool lacks.
func newTypedTool(rt *Runtime, tool *Tool, in, out reflect.Type) (*typedTool, error) {
	t := &typedTool{in: rt.plans.planFor(in), out: rt.plans.planFor(out), binder: binder{strict: true, required: tool.InputSchema == nil}, outPointer: out.Kind() == reflect.Pointer}
	if root := derefPlan(t.in); root.kind != planStruct || root.unmarshalJSON || root.unmarshalText {
		return nil, fmt.Errorf("the input type %v is not a struct or a pointer to one", in)
	}
	if root := derefPlan(t.out); !(root.kind == planStruct || root.kind == planMap && root.mapKey == planString && out.Kind() == reflect.Map) || root.marshalJSON || root.marshalText {
		return nil, fmt.Errorf("the output type %v is not a struct, a pointer to one or a map with string keys", out)
	}
	inSchema, err := inferSchema(t.in, true)
	if err != nil {
		return nil, fmt.Errorf("the input type %v: %w", in, err)
	}
	outSchema, err := inferSchema(t.out, false)
	if err != nil {
		return nil, fmt.Errorf("the output type %v: %w", out, err)
	}
	if tool.InputSchema == nil {
		tool.InputSchema = inSchema
	}
	if tool.OutputSchema == nil {
		tool.OutputSchema = outSchema
	}
	return t, nil
}

// derefPlan returns the plan p points to, through any number of pointers.
func derefPlan(p *typePlan) *typePlan {
	for p.kind == planPointer {
		p = p.elem
	}
	return p
}

// typedResult is a typed tool's result, in one allocation with its only
// content block and its structured content.
type typedResult struct {
	result     ToolResult
	block      [1]Content
	structured structuredOutput
}

// result fills in res with out, a value of t.out, and its text: text's
// String() when set, else the JSON of out.
func (t *typedTool) result(req *HandlerRequest, res *typedResult, out reflect.Value, text fmt.Stringer) (*ToolResult, error) {
	if out.Kind() == reflect.Pointer && out.IsNil() {
		req.logger().ErrorContext(req.logContext(), "typed tool returned a nil result", "tool", req.Name, "type", out.Type().String())
		return nil, internalError()
	}
	res.structured = structuredOutput{v: out, plan: t.out}
	if text != nil {
		res.block[0] = TextContent(text.String())
	} else {
		encoded, err := res.structured.appendJSON(nil)
		if err != nil {
			req.logger().ErrorContext(req.logContext(), "encoding a typed tool's result failed", "tool", req.Name, "err", err)
			return nil, internalError()
		}
		res.structured.encoded = encoded
		res.block[0] = TextContent(string(encoded))
	}
	res.result.Content = res.block[:]
	if dialectOf(req.ProtocolVersion).structuredContent {
		res.result.StructuredContent = &res.structured
	}
	return &res.result, nil
}

// structuredOutput is a typed tool's structured content: a value encoded
// (straight into the response frame, see appendPlainToolResult) by its plan,
// or its encoding when it had to be made before.
type structuredOutput struct {
	v       reflect.Value
	plan    *typePlan
	encoded []byte // nil until encoded
}

// appendJSON appends the encoding of s: compact, pure-ASCII JSON text, as
// marshalJSON produces.
func (s *structuredOutput) appendJSON(dst []byte) ([]byte, error) {
	return s.appendJSONReusing(dst, nil)
}

// appendJSONReusing is appendJSON, with the encoding of a string already in
// dst to copy where a field of the structured content has its text (see
// typePlan.appendJSONReusing); known may be nil.
func (s *structuredOutput) appendJSONReusing(dst []byte, known *encodedString) ([]byte, error) {
	if s.encoded != nil {
		return append(dst, s.encoded...), nil
	}
	if s.v.Kind() == reflect.Map && s.v.IsNil() {
		return append(dst, "{}"...), nil // an object, as outputSchema promises
	}
	return s.plan.appendJSONReusing(dst, s.v, known)
}

// sizeHint estimates the length of s's encoding, generously.
func (s *structuredOutput) sizeHint() int {
	if s.encoded != nil {
		return len(s.encoded)
	}
	return s.plan.sizeHint(s.v)
}

// MarshalJSON encodes s for encoding/json, for results that do not take
// the direct path.
func (s *structuredOutput) MarshalJSON() ([]byte, error) { return s.appendJSON(nil) }
