package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

const (
	defaultPageSize = 50
	maxPageSize     = 1000
)

func toolListMemos(env *callEnv, args argSet) (*toolOutcome, *rpcError) {
	if err := args.check("pageSize", "pageToken", "state", "orderBy", "filter", "showDeleted"); err != nil {
		return argError(err)
	}
	pageSize, _, err := args.integer("pageSize")
	if err != nil {
		return argError(err)
	}
	if pageSize <= 0 {
		pageSize = defaultPageSize
	}
	pageSize = min(pageSize, maxPageSize)
	pageToken, _, err := args.str("pageToken")
	if err != nil {
		return argError(err)
	}
	state, _, err := args.str("state")
	if err != nil {
		return argError(err)
	}
	orderBy, _, err := args.str("orderBy")
	if err != nil {
		return argError(err)
	}
	filter, _, err := args.str("filter")
	if err != nil {
		return argError(err)
	}
	if _, _, err := args.boolean("showDeleted"); err != nil { // accepted, ignored
		return argError(err)
	}

	q := listQuery{pageSize: pageSize, now: time.Now()}
	switch state {
	case "", "STATE_UNSPECIFIED", "NORMAL":
		q.state = "NORMAL"
	case "ARCHIVED":
		q.state = "ARCHIVED"
	default:
		return toolError("Invalid state %q: expected STATE_UNSPECIFIED, NORMAL or ARCHIVED.", state)
	}
	if q.order, err = parseOrderBy(orderBy); err != nil {
		return toolError("Invalid orderBy: %v.", err)
	}
	if q.filter, err = parseFilter(filter); err != nil {
		return toolError("Invalid filter expression: %v.", err)
	}
	if q.offset, err = decodePageToken(pageToken); err != nil {
		return toolError("Invalid page token %q.", pageToken)
	}
	res := env.s.store.list(q)
	env.progress(1, 2, "")
	return structuredResult(res)
}

type currentUser struct {
	User struct {
		Name        string `json:"name"`
		Username    string `json:"username"`
		Role        string `json:"role"`
		DisplayName string `json:"displayName"`
	} `json:"user"`
}

func toolCurrentUser(_ *callEnv, args argSet) (*toolOutcome, *rpcError) {
	if err := args.check(); err != nil {
		return argError(err)
	}
	var u currentUser
	u.User.Name, u.User.Username, u.User.Role, u.User.DisplayName = "users/1", "demo", "ADMIN", "Demo User"
	return structuredResult(u)
}

func toolExport(env *callEnv, args argSet) (*toolOutcome, *rpcError) {
	if err := args.check("steps"); err != nil {
		return argError(err)
	}
	steps, has, err := args.integer("steps")
	if err != nil {
		return argError(err)
	}
	if !has {
		steps = 5
	} else if steps < 1 || steps > 1000 {
		return toolError("Invalid arguments: steps must be between 1 and 1000.")
	}
	count := env.s.store.count()
	ctx := env.req.ctx
	for i := 1; i <= steps; i++ {
		t := time.NewTimer(env.s.cfg.stepDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
		env.progress(i, steps, fmt.Sprintf("exported %d/%d", i, steps))
	}
	return textResult(fmt.Sprintf("exported %d memos", count))
}

func toolDelete(env *callEnv, args argSet) (*toolOutcome, *rpcError) {
	if err := args.check("name"); err != nil {
		return argError(err)
	}
	name, _, err := args.str("name")
	if err != nil {
		return argError(err)
	}
	if name == "" {
		return toolError("Invalid arguments: name is required.")
	}
	if env.modern {
		return deleteModern(env, name)
	}
	return deleteLegacy(env, name)
}

func deleteLegacy(env *callEnv, name string) (*toolOutcome, *rpcError) {
	if !env.elicitation {
		return toolError("elicitation not supported by client")
	}
	if !env.s.store.exists(name) {
		return toolError("Memo not found: %s", name)
	}
	reply, err := env.s.elicitLegacy(env, "Delete "+name+"?")
	switch {
	case err != nil:
		return nil, nil // cancelled
	case reply.aborted:
		return toolError("Elicitation aborted: the client closed its input")
	case reply.err != nil:
		return toolError("Elicitation failed: %s", reply.err.Message)
	}
	var r elicitResult
	if json.Unmarshal(reply.result, &r) != nil {
		return toolError("Elicitation failed: malformed ElicitResult")
	}
	return applyDelete(env, name, r)
}

type deleteState struct {
	Tool string `json:"tool"`
	Name string `json:"name"`
}

func encodeDeleteState(name string) string {
	b, _ := json.Marshal(deleteState{Tool: "memo_delete_memo", Name: name})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeDeleteState(s string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", false
	}
	var st deleteState
	if json.Unmarshal(b, &st) != nil || st.Tool != "memo_delete_memo" || st.Name == "" {
		return "", false
	}
	return st.Name, true
}

// deleteModern asks for confirmation with an MRTR InputRequiredResult and
// completes on the retry that carries inputResponses.confirm and requestState.
func deleteModern(env *callEnv, name string) (*toolOutcome, *rpcError) {
	if !env.elicitation {
		return nil, &rpcError{
			Code:    codeMissingCapability,
			Message: "Client must declare the elicitation capability",
			Data:    json.RawMessage(`{"requiredCapabilities":{"elicitation":{}}}`),
		}
	}
	if !env.s.store.exists(name) {
		return toolError("Memo not found: %s", name)
	}
	params := env.req.params
	if raw := params["requestState"]; !isNull(raw) {
		var st string
		if json.Unmarshal(raw, &st) != nil {
			return nil, newError(codeInvalidParams, "Invalid params: requestState must be a string")
		}
		stName, ok := decodeDeleteState(st)
		if !ok {
			return nil, newError(codeInvalidParams, "Invalid params: requestState is not valid")
		}
		if stName != name {
			return nil, newError(codeInvalidParams, "Invalid params: requestState was issued for a different memo")
		}
		responses, ok := parseObject(params["inputResponses"])
		if !ok {
			return nil, newError(codeInvalidParams, "Invalid params: inputResponses must be an object")
		}
		if c := responses["confirm"]; !isNull(c) {
			var r elicitResult
			if json.Unmarshal(c, &r) != nil || r.Action == "" {
				return nil, newError(codeInvalidParams, "Invalid params: inputResponses.confirm must be an ElicitResult")
			}
			return applyDelete(env, name, r)
		}
	}
	return &toolOutcome{inputRequired: &inputRequiredResult{
		ResultType: "input_required",
		InputRequests: &confirmInputRequests{Confirm: inputRequest{
			Method: "elicitation/create",
			Params: elicitParams{Mode: "form", Message: "Delete " + name + "?", RequestedSchema: json.RawMessage(confirmSchema)},
		}},
		RequestState: encodeDeleteState(name),
		Meta:         modernMeta(),
	}}, nil
}

func applyDelete(env *callEnv, name string, r elicitResult) (*toolOutcome, *rpcError) {
	if r.Action != "accept" || !r.Content.Confirm {
		return textResult("kept " + name)
	}
	if !env.s.store.remove(name) {
		return toolError("Memo not found: %s", name)
	}
	env.s.logger.Printf("deleted %s", name)
	return textResult("deleted " + name)
}

type debugStats struct {
	Cancelled int `json:"cancelled"`
	InFlight  int `json:"inFlight"`
	Requests  int `json:"requests"`
	// PID lets tests kill this process mid-call to exercise a bridge's
	// crash handling.
	PID int `json:"pid"`
}

func toolStats(env *callEnv, args argSet) (*toolOutcome, *rpcError) {
	if err := args.check(); err != nil {
		return argError(err)
	}
	s := env.s
	s.mu.Lock()
	st := debugStats{Cancelled: s.cancelledCount, Requests: s.requestCount, PID: os.Getpid()}
	// A request whose response is already written (done, under writeMu) may
	// still be in the map for a moment; it no longer counts. Nor does this call.
	s.writeMu.Lock()
	for _, r := range s.inflight {
		if r != env.req && !r.done && !r.cancelled {
			st.InFlight++
		}
	}
	s.writeMu.Unlock()
	s.mu.Unlock()
	return structuredResult(st)
}

func toolToggle(env *callEnv, args argSet) (*toolOutcome, *rpcError) {
	if err := args.check(); err != nil {
		return argError(err)
	}
	s := env.s
	s.subsMu.Lock()
	enabled := s.tools.toggleBeta()
	s.notifyToolsChanged()
	s.subsMu.Unlock()
	if enabled {
		return textResult("memo_beta_echo enabled")
	}
	return textResult("memo_beta_echo disabled")
}

func toolEcho(_ *callEnv, args argSet) (*toolOutcome, *rpcError) {
	if err := args.check("text"); err != nil {
		return argError(err)
	}
	text, has, err := args.str("text")
	if err != nil {
		return argError(err)
	}
	if !has {
		return toolError("Invalid arguments: text is required.")
	}
	return textResult(text)
}
