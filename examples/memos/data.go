package main

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

type memo struct {
	Name       string
	State      string // NORMAL | ARCHIVED
	Content    string // Markdown
	Visibility string // PRIVATE | PROTECTED | PUBLIC
	Creator    string
	Pinned     bool
	Tags       []string
	Created    time.Time
	Updated    time.Time
}

func (m *memo) hasTaskList() bool {
	return strings.Contains(m.Content, "- [ ]") || strings.Contains(m.Content, "- [x]") || strings.Contains(m.Content, "- [X]")
}
func (m *memo) hasIncompleteTasks() bool { return strings.Contains(m.Content, "- [ ]") }
func (m *memo) hasLink() bool {
	return strings.Contains(m.Content, "http://") || strings.Contains(m.Content, "https://")
}
func (m *memo) hasCode() bool { return strings.Contains(m.Content, "```") }

// memoView is the wire form of a memo: exactly these keys, in this order.
type memoView struct {
	Name       string `json:"name"`
	State      string `json:"state"`
	Content    string `json:"content"`
	Visibility string `json:"visibility"`
}

type listResult struct {
	Memos         []memoView `json:"memos"`
	NextPageToken string     `json:"nextPageToken,omitempty"`
}

type seedMemo struct {
	uid, state, visibility, creator string
	pinned                          bool
	tags                            []string
	created, updated                time.Duration // before process start
	content                         string
}

// defaultMemos is the demo dataset (times are relative to process start).
// memos/example-public-memo is the only NORMAL memo that is not PRIVATE, so the
// article's call (pageSize 1, visibility != "PRIVATE") returns exactly it and
// no nextPageToken. The PROTECTED and the other PUBLIC memo are ARCHIVED.
var defaultMemos = []seedMemo{
	{"private-draft", "NORMAL", "PRIVATE", "users/1", false, []string{"personal"}, 10 * time.Minute, 5 * time.Minute,
		"Draft: reply to Alice about the team offsite. #personal"},
	{"example-public-memo", "NORMAL", "PUBLIC", "users/1", true, nil, time.Hour, time.Hour,
		"这是一条公开的示例 memo。"},
	{"urgent-deploy", "NORMAL", "PRIVATE", "users/1", false, []string{"work", "urgent"}, 5 * time.Hour, 2 * time.Hour,
		"#work #urgent Fix the deploy pipeline before Friday.\n- [ ] write the rollback plan\n- [x] notify the team"},
	{"roadmap-q3", "NORMAL", "PRIVATE", "users/1", false, []string{"work"}, 48 * time.Hour, 24 * time.Hour,
		"Q3 roadmap draft: search, sharing & offline mode. Details: https://example.com/roadmap #work"},
	{"code-snippet", "NORMAL", "PRIVATE", "users/1", false, []string{"dev"}, 96 * time.Hour, 90 * time.Hour,
		"Handy Go snippet:\n```go\nfmt.Println(\"<hello>, memos\")\n```\n#dev"},
	{"team-standup", "NORMAL", "PRIVATE", "users/2", false, []string{"work"}, 144 * time.Hour, 144 * time.Hour,
		"Standup notes #work\n- [x] review the API PR\n- [x] update the docs"},
	{"shopping-list", "NORMAL", "PRIVATE", "users/2", false, nil, 240 * time.Hour, 200 * time.Hour,
		"Groceries\n- [ ] milk\n- [ ] eggs"},
	{"urgent-invoice", "NORMAL", "PRIVATE", "users/2", false, []string{"urgent"}, 288 * time.Hour, 288 * time.Hour,
		"#urgent Pay the hosting invoice."},
	{"team-handbook", "ARCHIVED", "PROTECTED", "users/1", false, []string{"work"}, 360 * time.Hour, 300 * time.Hour,
		"Team handbook for signed-in users: https://example.com/handbook #work"},
	{"archived-ideas", "ARCHIVED", "PUBLIC", "users/1", true, []string{"ideas"}, 480 * time.Hour, 400 * time.Hour,
		"Ideas for the old blog theme (archived). #ideas"},
	{"roadmap-retro", "NORMAL", "PRIVATE", "users/2", false, []string{"planning"}, 720 * time.Hour, 600 * time.Hour,
		"Last year's roadmap retrospective: what shipped and what slipped. #planning"},
}

type store struct {
	mu    sync.Mutex
	memos []*memo
}

func newStore(dataset string, now time.Time) *store {
	st := &store{}
	if dataset == "empty" {
		return st
	}
	for _, s := range defaultMemos {
		st.memos = append(st.memos, &memo{
			Name: "memos/" + s.uid, State: s.state, Content: s.content, Visibility: s.visibility,
			Creator: s.creator, Pinned: s.pinned, Tags: slices.Clone(s.tags),
			Created: now.Add(-s.created), Updated: now.Add(-s.updated),
		})
	}
	return st
}

func (st *store) count() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.memos)
}

func (st *store) exists(name string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.ContainsFunc(st.memos, func(m *memo) bool { return m.Name == name })
}

func (st *store) remove(name string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := len(st.memos)
	st.memos = slices.DeleteFunc(st.memos, func(m *memo) bool { return m.Name == name })
	return len(st.memos) != n
}

type orderKey struct {
	field string
	desc  bool
}

type listQuery struct {
	pageSize int
	offset   int
	state    string
	order    []orderKey
	filter   *filterExpr
	now      time.Time
}

func (st *store) list(q listQuery) listResult {
	st.mu.Lock()
	var matched []*memo
	for _, m := range st.memos {
		if m.State == q.state && q.filter.match(m, q.now) {
			matched = append(matched, m)
		}
	}
	st.mu.Unlock()
	slices.SortStableFunc(matched, func(a, b *memo) int { return compareMemos(a, b, q.order) })
	res := listResult{Memos: []memoView{}}
	start := min(q.offset, len(matched))
	end := min(start+q.pageSize, len(matched))
	for _, m := range matched[start:end] {
		res.Memos = append(res.Memos, memoView{Name: m.Name, State: m.State, Content: m.Content, Visibility: m.Visibility})
	}
	if end < len(matched) {
		res.NextPageToken = encodePageToken(end)
	}
	return res
}

func compareMemos(a, b *memo, order []orderKey) int {
	for _, k := range order {
		var c int
		switch k.field {
		case "pinned":
			c = cmpBool(a.Pinned, b.Pinned)
		case "create_time":
			c = a.Created.Compare(b.Created)
		case "update_time":
			c = a.Updated.Compare(b.Updated)
		case "name":
			c = cmp.Compare(a.Name, b.Name)
		}
		if k.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	// Deterministic tie-break: newest first, then by name.
	if c := b.Created.Compare(a.Created); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

var orderFields = []string{"pinned", "create_time", "update_time", "name"}

// parseOrderBy parses AIP-132 ordering: "field [asc|desc], ...".
func parseOrderBy(s string) ([]orderKey, error) {
	if strings.TrimSpace(s) == "" {
		return []orderKey{{field: "create_time", desc: true}}, nil
	}
	var keys []orderKey
	for part := range strings.SplitSeq(s, ",") {
		words := strings.Fields(part)
		if len(words) == 0 {
			return nil, errors.New("empty sort field")
		}
		if len(words) > 2 {
			return nil, fmt.Errorf("unexpected %q after %s %s", words[2], words[0], words[1])
		}
		field := words[0]
		if !slices.Contains(orderFields, field) {
			hint := ""
			switch field {
			case "created_ts", "create_ts":
				hint = " (use create_time; created_ts is the filter name)"
			case "updated_ts", "update_ts":
				hint = " (use update_time; updated_ts is the filter name)"
			}
			return nil, fmt.Errorf("unsupported field %q%s; supported fields: pinned, create_time, update_time, name", field, hint)
		}
		k := orderKey{field: field}
		if len(words) == 2 {
			switch strings.ToLower(words[1]) {
			case "asc":
			case "desc":
				k.desc = true
			default:
				return nil, fmt.Errorf("invalid direction %q for %s (use asc or desc)", words[1], field)
			}
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// Page tokens are opaque to clients: base64 of the decimal offset.
func encodePageToken(offset int) string {
	return base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(offset)))
}

func decodePageToken(tok string) (int, error) {
	if tok == "" {
		return 0, nil
	}
	b, err := base64.StdEncoding.DecodeString(tok)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 {
		return 0, errors.New("bad offset")
	}
	return n, nil
}
