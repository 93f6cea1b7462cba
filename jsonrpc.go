package main

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
)

// Wire messages of the transport itself. Every frame is one JSON object on one
// line, pure ASCII, ending in a single "\n".

var (
	errInvalidRequest  = &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request"}
	errParseFrame      = &RPCError{Code: CodeParseError, Message: "Parse error"}
	errReadInput       = &RPCError{Code: CodeParseError, Message: "Failed to read stdio input"}
	errDuplicateID     = &RPCError{Code: CodeInvalidRequest, Message: "Duplicate in-flight request id"}
	errCapacity        = &RPCError{Code: CodeInternalError, Message: "Server execution capacity exhausted"}
	errRequestTimedOut = &RPCError{Code: CodeInternalError, Message: "Request execution timed out"}
	errWorkerFailed    = &RPCError{Code: CodeInternalError, Message: "Request worker failed"}

	errSubscriptionCapacity = &RPCError{Code: CodeInternalError, Message: "Server subscription capacity exhausted"}
)

func errLineLimit(maxLineBytes int) *RPCError {
	return &RPCError{Code: CodeInvalidRequest, Message: "Message exceeds the " + strconv.Itoa(maxLineBytes) + "-byte line limit"}
}

func invalidRequest(reason string) *RPCError {
	return &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request: " + reason}
}

// Pieces of a response frame around its canonical id and its result.
const (
	frameEnvelopeStart = `{"jsonrpc":"2.0","id":`
	frameResultKey     = `,"result":`
	frameEnd           = "}\n"
)

// appendEnvelopeStart appends `{"jsonrpc":"2.0","id":ID` where ID is a canonical id from
// canonicalID, or null when id is empty.
func appendEnvelopeStart[ID string | []byte](dst []byte, id ID) []byte {
	dst = append(dst, frameEnvelopeStart...)
	if len(id) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, id...)
	}
	return dst
}

// resultFrame returns the response frame for a result, a valid JSON text.
func resultFrame(id string, result json.RawMessage) []byte {
	if len(result) == 0 {
		result = json.RawMessage("{}")
	}
	frame := make([]byte, 0, len(result)+len(id)+40)
	frame = appendEnvelopeStart(frame, id)
	frame = append(frame, frameResultKey...)
	frame = appendASCII(frame, result)
	return append(frame, frameEnd...)
}

// startResultFrame returns a new buffer holding the start of the response
// frame of req's result, with room for size bytes of result and the frame's
// end. The runtime appends a result that is compact, pure-ASCII JSON text (as
// appendASCII leaves it unchanged) and hands the buffer to framedResult, so
// the transport writes the frame without copying the result again.
func startResultFrame(req *Request, size int) []byte {
	need := resultFrameCap(req, size)
	var frame []byte
	if s := req.frameSpace; s != nil && s.claimed.CompareAndSwap(false, true) {
		if cap(s.buf) < need {
			s.buf = make([]byte, 0, need)
		}
		frame = s.buf[:0]
	} else {
		frame = make([]byte, 0, need)
	}
	frame = appendEnvelopeStart(frame, []byte(req.ID))
	return append(frame, frameResultKey...)
}

// frameSpace is a buffer a transport lends for the answer frame of one
// request, which it takes back once the frame is written. The first
// startResultFrame of the request claims it (a request dispatched twice
// gets a buffer of its own the second time); one too small is replaced by
// a new one, which the transport then takes back instead.
type frameSpace struct {
	claimed atomic.Bool
	buf     []byte
}

// resultFrameCap is the capacity of the buffer startResultFrame returns for
// size bytes of req's result: the frame's length at most.
func resultFrameCap(req *Request, size int) int {
	return len(frameEnvelopeStart) + len(req.ID) + len(frameResultKey) + size + len(frameEnd)
}

// framedResult returns the Reply whose Result is frame[start:], appended to
// the frame start frame[:start] from startResultFrame, and ends the frame.
// Result's capacity is capped, so appending to it never writes into the frame.
func framedResult(frame []byte, start int) Reply {
	end := len(frame)
	frame = append(frame, frameEnd...)
	return Reply{Result: frame[start:end:end], frame: frame}
}

// replyFrame returns the response frame of r, a successful reply to the
// request whose canonical id is id: the frame the runtime built along with
// the result when it is exactly the one resultFrame would build (see
// builtFrame), else resultFrame's.
func replyFrame(id string, r *Reply) []byte {
	if frame, ok := r.builtFrame(id); ok {
		return frame
	}
	return resultFrame(id, r.Result)
}

// builtFrame returns r.frame when it is the start of the response frame for
// id, then r.Result itself (the very bytes, not a copy, which framedResult
// vouches for), then the frame's end. A copy of r whose Result was replaced,
// or a reply built for another id, does not qualify.
func (r *Reply) builtFrame(id string) ([]byte, bool) {
	frame, result := r.frame, r.Result
	start := len(frame) - len(result) - len(frameEnd)
	if len(result) == 0 || start < 0 || &frame[start] != &result[0] || string(frame[start+len(result):]) != frameEnd {
		return nil, false
	}
	if id == "" {
		id = "null"
	}
	prefix := frame[:start]
	idAt, keyAt := len(frameEnvelopeStart), len(frameEnvelopeStart)+len(id)
	if len(prefix) != keyAt+len(frameResultKey) || string(prefix[:idAt]) != frameEnvelopeStart ||
		string(prefix[idAt:keyAt]) != id || string(prefix[keyAt:]) != frameResultKey {
		return nil, false
	}
	return frame, true
}

// errorFrame returns the response frame for an error. An error whose data
// cannot be encoded is sent without it (the failure is the server's, not the
// client's, and must not lose the answer).
func errorFrame(id string, e *RPCError) []byte {
	body, err := marshalJSON(e)
	if err != nil {
		body, _ = marshalJSON(&RPCError{Code: e.Code, Message: e.Message})
	}
	frame := make([]byte, 0, len(body)+len(id)+40)
	frame = appendEnvelopeStart(frame, id)
	frame = append(frame, `,"error":`...)
	frame = append(frame, body...)
	return append(frame, "}\n"...)
}

// notificationFrame returns the frame of a server-to-client notification;
// params is a JSON object or nil.
func notificationFrame(method string, params json.RawMessage) ([]byte, error) {
	m, err := marshalJSON(method)
	if err != nil {
		return nil, err
	}
	frame := make([]byte, 0, len(params)+len(m)+40)
	frame = append(frame, `{"jsonrpc":"2.0","method":`...)
	frame = append(frame, m...)
	if params != nil {
		frame = append(frame, `,"params":`...)
		frame = appendASCII(frame, params)
	}
	return append(frame, "}\n"...), nil
}

// admit validates the envelope of a decoded message (the envelope checks of
// docs/explanation/contract.md, "The per-line pipeline") whose canonical id
// is id ("" when absent or not trackable). For a message to dispatch it
// sets req's Method, ID and Params, leaving its other fields alone, and
// returns true; otherwise it returns the error to answer,
// or neither for a malformed notification, which is dropped without an
// answer. env must come from decodeEnvelope, which validated the whole line:
// the request's params are marked validated, so Dispatch does not check them
// again.
func admit(req *Request, env envelope, id string) (bool, *RPCError) {
	if env.kind != kindObject {
		return false, errInvalidRequest
	}
	method, methodOK := decodeMethod(env.method)
	if env.id == nil {
		if !methodOK {
			return false, invalidRequest(`"method" must be a string`)
		}
		if !isJSONRPC2(env.jsonrpc) || !isObjectOrAbsent(env.params) {
			return false, nil
		}
		req.Method, req.ID, req.Params, req.validParams = method, nil, env.params, env.params
		return true, nil
	}
	switch {
	case !isJSONRPC2(env.jsonrpc):
		return false, invalidRequest(`"jsonrpc" must be "2.0"`)
	case !methodOK:
		return false, invalidRequest(`"method" must be a string`)
	case id == "":
		return false, invalidRequest(`"id" must be a string of at most 256 bytes or a 64-bit integer`)
	case !isObjectOrAbsent(env.params):
		return false, &RPCError{Code: CodeInvalidParams, Message: `Invalid params: "params" must be an object`}
	}
	canonical := json.RawMessage(env.id)
	if string(canonical) != id {
		canonical = []byte(id)
	}
	req.Method, req.ID = method, canonical[:len(canonical):len(canonical)]
	req.Params, req.validParams = env.params, env.params
	return true, nil
}

func isJSONRPC2(raw []byte) bool {
	if string(raw) == `"2.0"` {
		return true
	}
	s, ok := decodeString(raw)
	return ok && s == "2.0"
}

// isResponse reports whether env is a response from the client
// (docs/explanation/contract.md, "The per-line pipeline", step 3): an object
// without method that has result or error.
func (env *envelope) isResponse() bool {
	return env.kind == kindObject && env.method == nil && (env.result != nil || env.errorV != nil)
}

// isNotification reports whether env, whose method decoded as a string
// (methodOK, see decodeMethod), is a notification: an object with a method
// and no id.
func (env *envelope) isNotification(methodOK bool) bool {
	return env.kind == kindObject && env.id == nil && methodOK
}

func isObjectOrAbsent(raw []byte) bool { return raw == nil || raw[0] == '{' }

// decodeMethod is decodeString for a method name: the names the runtime
// serves come back as constants, without allocating.
func decodeMethod(raw []byte) (string, bool) {
	if isPlainASCIIString(raw) {
		if m := knownMethod(raw[1 : len(raw)-1]); m != "" {
			return m, true
		}
	}
	return decodeString(raw)
}

// knownMethod returns the protocol method named name, "" for any other.
func knownMethod(name []byte) string {
	switch string(name) {
	case methodToolsCall:
		return methodToolsCall
	case methodToolsList:
		return methodToolsList
	case methodResourcesRead:
		return methodResourcesRead
	case methodResourcesList:
		return methodResourcesList
	case methodResourcesTemplatesList:
		return methodResourcesTemplatesList
	case methodPromptsGet:
		return methodPromptsGet
	case methodPromptsList:
		return methodPromptsList
	case methodCompletionComplete:
		return methodCompletionComplete
	case methodPing:
		return methodPing
	case methodInitialize:
		return methodInitialize
	case methodInitialized:
		return methodInitialized
	case methodCancelled:
		return methodCancelled
	case methodProgress:
		return methodProgress
	}
	return ""
}
