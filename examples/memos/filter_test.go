package main

import (
	"strings"
	"testing"
	"time"
)

func listNames(t *testing.T, st *store, q listQuery) []string {
	t.Helper()
	if q.pageSize == 0 {
		q.pageSize = 100
	}
	if q.state == "" {
		q.state = "NORMAL"
	}
	if q.now.IsZero() {
		q.now = time.Now()
	}
	var names []string
	for _, m := range st.list(q).Memos {
		names = append(names, strings.TrimPrefix(m.Name, "memos/"))
	}
	return names
}

func TestFilterExamples(t *testing.T) {
	st := newStore("default", time.Now())
	for _, tc := range []struct {
		filter, state, want string
	}{
		{`visibility != "PRIVATE"`, "", "example-public-memo"},
		{`pinned == true && visibility == "PUBLIC"`, "", "example-public-memo"},
		{`tags.exists(t, t == "urgent")`, "", "urgent-deploy urgent-invoice"},
		{`content.contains("roadmap") && created_ts > now - duration("168h")`, "", "roadmap-q3"},
		{`content.contains("roadmap")`, "", "roadmap-q3 roadmap-retro"},
		{`"work" in tags`, "", "urgent-deploy roadmap-q3 team-standup"},
		{`"work" in tags`, "ARCHIVED", "team-handbook"},
		{`visibility == "PROTECTED"`, "ARCHIVED", "team-handbook"},
		{`pinned`, "ARCHIVED", "archived-ideas"},
		{`has_task_list && !has_incomplete_tasks`, "", "team-standup"},
		{`has_incomplete_tasks`, "", "urgent-deploy shopping-list"},
		{`has_link`, "", "roadmap-q3"},
		{`has_code`, "", "code-snippet"},
		{`creator == "users/2" && (size(tags) == 0 || "urgent" in tags)`, "", "shopping-list urgent-invoice"},
		{`tags.all(t, t.startsWith("w"))`, "", "example-public-memo roadmap-q3 team-standup shopping-list"},
		{`visibility in ["PUBLIC", "PROTECTED"]`, "", "example-public-memo"},
		{`created_ts < now - duration("250h") || updated_ts >= timestamp("2100-01-01T00:00:00Z")`, "", "urgent-invoice roadmap-retro"},
		{`created_ts > 0 && content.endsWith("#dev")`, "", "code-snippet"},
		{`!(visibility == "PRIVATE") || content.contains("offsite")`, "", "private-draft example-public-memo"},
		{`now - created_ts < duration("2h")`, "", "private-draft example-public-memo"},
		{`  `, "ARCHIVED", "team-handbook archived-ideas"},
	} {
		f, err := parseFilter(tc.filter)
		if err != nil {
			t.Errorf("%s: %v", tc.filter, err)
			continue
		}
		got := strings.Join(listNames(t, st, listQuery{filter: f, state: tc.state}), " ")
		if got != tc.want {
			t.Errorf("%s [%s]\n got %s\nwant %s", tc.filter, tc.state, got, tc.want)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	for _, tc := range []struct{ filter, want string }{
		{`visibility`, "expected a comparison after visibility"},
		{`visibility && pinned`, "expected a comparison after visibility"},
		{`visibility PUBLIC`, "expected a comparison after visibility"},
		{`visibility == PUBLIC`, `unknown field PUBLIC at position 15 (string values need quotes: "PUBLIC")`},
		{`visibility = "PUBLIC"`, "unexpected '=' at position 12 (use == to compare)"},
		{`visibility == "public"`, `unknown visibility "public" (expected PRIVATE, PROTECTED or PUBLIC)`},
		{`visibility ==`, "unexpected end of expression"},
		{`(pinned`, "expected ')' but found end of expression at position 8"},
		{`tag == "work"`, `unknown field tag at position 1 (tags is a list: write "work" in tags)`},
		{`create_time > now`, "unknown field create_time at position 1 (filters use created_ts / updated_ts)"},
		{`pinned == "true"`, `cannot compare pinned (bool) with "true" (string)`},
		{`pinned < true`, "operator < is not defined for bool"},
		{`tags == "work"`, `cannot compare tags (list<string>) with "work" (string)`},
		{`"work" in content`, `the right side of 'in' must be a list such as tags, not content (string)`},
		{`content.contains(1)`, "contains() expects a string argument, not int"},
		{`created_ts > now - duration("7d")`, `invalid duration "7d" (use a value such as "168h" or "90m")`},
		{`created_ts > timestamp("yesterday")`, `invalid timestamp "yesterday" (use RFC 3339, e.g. "2026-01-02T15:04:05Z")`},
		{`content.contains("x`, "unterminated string starting at position 18"},
		{`pinned & has_link`, "unexpected '&' at position 8 (use && to combine conditions)"},
		{`pinned # x`, `unexpected character '#' at position 8`},
		{`pinned pinned`, "unexpected identifier pinned at position 8"},
		{`foo(1)`, "unknown function foo() at position 1"},
		{`content.matches("x")`, "unknown method matches() at position 9"},
		{`tags.exists(content, true)`, "content cannot be used as a variable name"},
		{`!visibility == "PUBLIC"`, "'!' applies only to visibility; wrap the comparison in parentheses: !(visibility == ...)"},
		{`now()`, "now is a value, not a function (write now, not now())"},
		{`"x"`, `expected a condition but found "x" (string)`},
		{`created_ts + now > now`, "operator + is not defined for timestamp and timestamp"},
		{strings.Repeat("(", 200) + "pinned" + strings.Repeat(")", 200), "expression is nested too deeply"},
		{`99999999999999999999 > 1`, "number 99999999999999999999 at position 1 is too large"},
		{`content.contains("中") && visibility`, "expected a comparison after visibility"},
		{`中 == "x"`, `unexpected character '中' at position 1`},
	} {
		_, err := parseFilter(tc.filter)
		if err == nil {
			t.Errorf("%s: no error, want %q", tc.filter, tc.want)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s\n got %q\nwant %q", tc.filter, err.Error(), tc.want)
		}
	}
}

func TestOrderBy(t *testing.T) {
	st := newStore("default", time.Now())
	for _, tc := range []struct{ order, want string }{
		{"", "private-draft example-public-memo urgent-deploy"},
		{"create_time asc", "roadmap-retro urgent-invoice shopping-list"},
		{"pinned desc, create_time asc", "example-public-memo roadmap-retro urgent-invoice"},
		{"update_time desc", "private-draft example-public-memo urgent-deploy"},
		{"name", "code-snippet example-public-memo private-draft"},
		{"name desc", "urgent-invoice urgent-deploy team-standup"},
	} {
		keys, err := parseOrderBy(tc.order)
		if err != nil {
			t.Fatalf("%q: %v", tc.order, err)
		}
		got := strings.Join(listNames(t, st, listQuery{order: keys, pageSize: 3}), " ")
		if got != tc.want {
			t.Errorf("%q\n got %s\nwant %s", tc.order, got, tc.want)
		}
	}
	for _, bad := range []string{"created_ts desc", "pinned sideways", "name asc extra", "name,,pinned"} {
		if _, err := parseOrderBy(bad); err == nil {
			t.Errorf("%q: expected an error", bad)
		}
	}
}

func TestListArgumentErrors(t *testing.T) {
	h := startServer(t)
	for i, tc := range []struct{ args, want string }{
		{`{"orderBy":"created_ts desc"}`, `Invalid orderBy: unsupported field "created_ts" (use create_time; created_ts is the filter name); supported fields: pinned, create_time, update_time, name.`},
		{`{"state":"DELETED"}`, `Invalid state "DELETED": expected STATE_UNSPECIFIED, NORMAL or ARCHIVED.`},
		{`{"pageSize":"10"}`, `Invalid arguments: pageSize must be an integer.`},
		{`{"page_size":10}`, `Invalid arguments: unknown argument "page_size".`},
		{`{"filter":"visibility == PUBLIC"}`, `Invalid filter expression: unknown field PUBLIC at position 15 (string values need quotes: "PUBLIC").`},
	} {
		id := string(rune('a' + i))
		h.send(mcall(`"`+id+`"`, "memo_list_memos", tc.args))
		h.expect(modernResult(`"`+id+`"`, tc.want, "", true))
	}
	// pageSize above 1000 is coerced; <= 0 means the default.
	for _, args := range []string{`{"pageSize":5000}`, `{"pageSize":0}`, `{"pageSize":-3,"state":"STATE_UNSPECIFIED","showDeleted":true}`} {
		names, next := memoNames(t, h.roundTrip(mcall("1", "memo_list_memos", args)))
		if len(names) != 9 || next != "" {
			t.Errorf("%s: got %d memos, token %q", args, len(names), next)
		}
	}
}

func FuzzFilter(f *testing.F) {
	for _, s := range []string{
		`visibility != "PRIVATE"`,
		`pinned == true && visibility == "PUBLIC"`,
		`tags.exists(t, t == "urgent")`,
		`content.contains("roadmap") && created_ts > now - duration("168h")`,
		`"work" in tags`,
		`visibility`,
		`!(a || b) && [`,
		`tags.exists(t, tags.all(u, u == t))`,
		`size("中文") > -1 && created_ts - updated_ts <= -duration("1h")`,
		`'single \' quoted' + "x" == content`,
		`timestamp("2026-01-02T15:04:05Z") < now`,
	} {
		f.Add(s)
	}
	st := newStore("default", time.Now())
	f.Fuzz(func(t *testing.T, src string) {
		expr, err := parseFilter(src)
		if err != nil {
			if expr != nil {
				t.Fatalf("non-nil expression with error %v", err)
			}
			if strings.HasSuffix(err.Error(), ".") {
				t.Fatalf("error message must not end with a period: %q", err.Error())
			}
			return
		}
		now := time.Now()
		for _, m := range st.memos {
			expr.match(m, now)
		}
	})
}
