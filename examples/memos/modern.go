package main

import (
	"encoding/json"
	"slices"
)

// Modern era (2026-07-28): every request carries its own _meta; no handshake.

var modernMethods = []string{"server/discover", "tools/list", "tools/call", "subscriptions/listen"}

func (s *server) modernRequest(req *request) {
	if !slices.Contains(modernMethods, req.method) {
		s.immediate(req.batch, req.id, nil, newError(codeMethodNotFound, "Method not found: "+req.method))
		return
	}
	env, rerr := s.modernEnv(req)
	if rerr != nil {
		s.immediate(req.batch, req.id, nil, rerr)
		return
	}
	switch req.method {
	case "server/discover":
		s.spawn(req, func(*request) (any, *rpcError) { return s.discover(), nil })
	case "tools/list":
		s.spawn(req, func(r *request) (any, *rpcError) { return s.modernToolsList(r) })
	case "tools/call":
		s.spawn(req, func(*request) (any, *rpcError) { return s.callTool(env) })
	case "subscriptions/listen":
		s.listen(req)
	}
}

// modernEnv validates the per-request _meta envelope.
func (s *server) modernEnv(req *request) (*callEnv, *rpcError) {
	pvRaw, ok := req.meta[metaProtocolVersion]
	if !ok {
		return nil, newError(codeInvalidParams, "Missing required _meta field: "+metaProtocolVersion)
	}
	var pv string
	if json.Unmarshal(pvRaw, &pv) != nil || pv != modernVersion {
		return nil, unsupportedVersion(pvRaw)
	}
	capsRaw, ok := req.meta[metaClientCapabilities]
	if !ok || isNull(capsRaw) {
		return nil, newError(codeInvalidParams, "Missing required _meta field: "+metaClientCapabilities)
	}
	caps, ok := parseObject(capsRaw)
	if !ok {
		return nil, newError(codeInvalidParams, "Invalid _meta field: "+metaClientCapabilities+" must be an object")
	}
	env := &callEnv{
		s:             s,
		req:           req,
		modern:        true,
		version:       modernVersion,
		elicitation:   !isNull(caps["elicitation"]),
		logLevel:      -1,
		progressToken: progressToken(req.meta),
	}
	if raw, ok := req.meta[metaLogLevel]; ok && !isNull(raw) {
		var name string
		if json.Unmarshal(raw, &name) != nil {
			return nil, newError(codeInvalidParams, "Invalid log level: "+string(raw))
		}
		n, ok := logLevels[name]
		if !ok {
			return nil, newError(codeInvalidParams, "Invalid log level: "+name)
		}
		env.logLevel = n
	}
	return env, nil
}

func (s *server) discover() discoverResult {
	r := discoverResult{
		ResultType:        "complete",
		SupportedVersions: []string{modernVersion},
		Instructions:      serverInstructions,
		TTLMs:             cacheTTLMs,
		CacheScope:        cacheScope,
		Meta:              modernMeta(),
	}
	r.Capabilities.Tools.ListChanged = s.cfg.dynamicTools
	return r
}

func (s *server) modernToolsList(req *request) (any, *rpcError) {
	if raw := req.params["cursor"]; !isNull(raw) {
		var c string
		if json.Unmarshal(raw, &c) != nil || c != "" {
			return nil, newError(codeInvalidParams, "Invalid params: unknown cursor")
		}
	}
	return toolsListResult{
		ResultType: "complete",
		Tools:      s.tools.list(),
		TTLMs:      cacheTTLMs,
		CacheScope: cacheScope,
		Meta:       modernMeta(),
	}, nil
}

// subscription is one open subscriptions/listen stream.
type subscription struct {
	req   *request
	tools bool // honoured toolsListChanged
}

type subscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
}

type ackFilter struct {
	ToolsListChanged bool `json:"toolsListChanged,omitempty"`
}

type ackParams struct {
	Meta          notificationMeta `json:"_meta"`
	Notifications ackFilter        `json:"notifications"`
}

type listChangedParams struct {
	Meta notificationMeta `json:"_meta"`
}

// listen acknowledges synchronously (so the ack precedes any list_changed for
// this subscription) and keeps the request open until cancelled or stdin closes.
func (s *server) listen(req *request) {
	var f subscriptionFilter
	if raw := req.params["notifications"]; !isNull(raw) {
		if json.Unmarshal(raw, &f) != nil {
			s.immediate(req.batch, req.id, nil, newError(codeInvalidParams, "Invalid params: notifications must be a subscription filter object"))
			return
		}
	}
	sub := &subscription{req: req, tools: f.ToolsListChanged && s.cfg.dynamicTools}
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	s.spawn(req, func(r *request) (any, *rpcError) {
		defer s.removeSubscription(sub)
		select {
		case <-r.ctx.Done():
			return nil, nil
		case <-s.eofCh:
			return completeResult{
				ResultType: "complete",
				Meta:       &resultMeta{SubscriptionID: r.id, ServerInfo: &serverInfo},
			}, nil
		}
	})
	s.sendFor(req, outNotification{
		JSONRPC: "2.0",
		Method:  "notifications/subscriptions/acknowledged",
		Params: ackParams{
			Meta:          notificationMeta{SubscriptionID: req.id},
			Notifications: ackFilter{ToolsListChanged: sub.tools},
		},
	})
	s.subs = append(s.subs, sub)
}

func (s *server) removeSubscription(sub *subscription) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	s.subs = slices.DeleteFunc(s.subs, func(x *subscription) bool { return x == sub })
}

// notifyToolsChanged tells every interested party that the tool list changed.
// The caller holds subsMu.
func (s *server) notifyToolsChanged() {
	for _, sub := range s.subs {
		if sub.tools {
			s.sendFor(sub.req, outNotification{
				JSONRPC: "2.0",
				Method:  "notifications/tools/list_changed",
				Params:  listChangedParams{Meta: notificationMeta{SubscriptionID: sub.req.id}},
			})
		}
	}
	s.mu.Lock()
	legacy := s.initialized
	s.mu.Unlock()
	if legacy {
		s.sendUnsolicited(outNotification{JSONRPC: "2.0", Method: "notifications/tools/list_changed"})
	}
}
