package translate

import "github.com/mcp-bridge/mcp-bridge/bridge/wire"

// AppendNotifications appends the notifications object of
// subscriptions/listen, a filter or its acknowledgement: the list_changed
// kinds that are on, then the resource URIs.
func AppendNotifications(dst []byte, tools, prompts, resources bool, uris []string) []byte {
	dst = append(dst, '{')
	n := len(dst)
	add := func(k string) {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = append(dst, `"`+k+`":true`...)
	}
	if tools {
		add("toolsListChanged")
	}
	if prompts {
		add("promptsListChanged")
	}
	if resources {
		add("resourcesListChanged")
	}
	if len(uris) > 0 {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = append(dst, `"resourceSubscriptions":[`...)
		for i, u := range uris {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = wire.AppendString(dst, u)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}
