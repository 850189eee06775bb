package agentcli

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The JSON-RPC 2.0 messages Conch reads and writes: on the MCP server it
// serves a run (mcp.go), and on the stdio of a CLI it drives (rpc.go).

// JSON-RPC error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcNoMethod       = -32601
	rpcInvalidParams  = -32602
	rpcCancelled      = -32800 // the client cancelled the request
)

// rpcMessage is one JSON-RPC 2.0 message from the client: a request (id
// and method), a notification (method, no id) or a response.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// rpcError is the error a reply carries.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// rpcReply is the reply to a request: its result or its error.
type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// decodeRPC reads one JSON-RPC message. A message that cannot be served
// gives an error to send back, with the HTTP status for it; its id is
// the message's when it could be read, else null.
func decodeRPC(body []byte) (rpcMessage, *rpcReply) {
	var m rpcMessage
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return m, errReply(nil, rpcInvalidRequest, "batches are not supported")
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, errReply(nil, rpcParseError, "parse error")
	}
	if len(m.ID) > 0 && !validID(m.ID) {
		return m, errReply(nil, rpcInvalidRequest, "id must be a string or a number")
	}
	if m.JSONRPC != "2.0" {
		return m, errReply(m.ID, rpcInvalidRequest, `jsonrpc must be "2.0"`)
	}
	if m.Method == "" && (len(m.ID) == 0 || len(m.Result) == 0 && len(m.Error) == 0) {
		return m, errReply(m.ID, rpcInvalidRequest, "no method")
	}
	return m, nil
}

// validID reports whether raw is a JSON string or number (MCP forbids a
// null id).
func validID(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// errReply is the reply of an error to the request id, null when its id
// could not be read.
func errReply(id json.RawMessage, code int, msg string) *rpcReply {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return &rpcReply{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg}}
}

// idKey makes a JSON-RPC id comparable however the client wrote it
// ("a\u0062" and "ab", 1 and 1.0).
func idKey(raw json.RawMessage) string {
	var v any
	_ = json.Unmarshal(raw, &v)
	switch v := v.(type) {
	case string:
		return "s:" + v
	case float64:
		return "n:" + strconv.FormatFloat(v, 'g', -1, 64)
	}
	return "?" + string(raw)
}
