package check

import (
	"strings"
	"testing"
)

func TestListPage(t *testing.T) {
	p, err := ListPage(resp(200, `{"object":"list","data":[{"id":"a"},{"id":"b"}],"page":{"has_more":true,"next_cursor":"c1"},"x":1}`))
	if err != nil || len(p.Items) != 2 || p.IDs[1] != "b" || !p.HasMore || p.NextCursor != "c1" {
		t.Errorf("ListPage(good) = %+v, %v", p, err)
	}
	if _, err := ListPage(resp(200, `{"object":"list","data":[],"page":{"has_more":false}}`)); err != nil {
		t.Errorf("ListPage(empty, next_cursor absent) = %v", err)
	}
	for body, want := range map[string]string{
		`[]`: "want an object",
		`{"object":"lists","data":[],"page":{"has_more":false,"next_cursor":null}}`: `object = "lists"`,
		`{"object":"list","data":{},"page":{"has_more":false,"next_cursor":null}}`:  "data is an object",
		`{"object":"list","data":[1],"page":{"has_more":false,"next_cursor":null}}`: "data[0] is json.Number",
		`{"object":"list","data":[]}`: "page is missing",
		`{"object":"list","data":[],"page":{"has_more":"no","next_cursor":null}}`: "has_more is a string",
		`{"object":"list","data":[],"page":{"has_more":true,"next_cursor":null}}`: "cannot be reached",
		`{"object":"list","data":[],"page":{"has_more":false,"next_cursor":3}}`:   "next_cursor is json.Number",
	} {
		if _, err := ListPage(resp(200, body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ListPage(%s) = %v, want %q", body, err, want)
		}
	}
}

func TestLimit(t *testing.T) {
	two := Page{Items: make([]map[string]any, 2), HasMore: true}
	if err := Limit(resp(200, ""), two, 2, 5); err != nil {
		t.Errorf("Limit(2 of 5, more) = %v", err)
	}
	if err := Limit(resp(200, ""), Page{Items: make([]map[string]any, 5)}, 2, 5); err == nil || !strings.Contains(err.Error(), "holds 5 items, want at most 2") {
		t.Errorf("Limit(5 for 2) = %v", err)
	}
	if err := Limit(resp(200, ""), Page{Items: make([]map[string]any, 2)}, 2, 5); err == nil || !strings.Contains(err.Error(), "has_more is false") {
		t.Errorf("Limit(no has_more) = %v", err)
	}
}

func TestWalk(t *testing.T) {
	want := []string{"a", "b", "c", "d", "e"}
	if err := Walk([][]string{{"a", "b"}, {"c", "d"}, {"e"}}, want, false); err != nil {
		t.Errorf("Walk(good) = %v", err)
	}
	if err := Walk([][]string{{"x", "a", "b"}, {"c", "d", "e"}}, want, true); err != nil {
		t.Errorf("Walk(others allowed) = %v", err)
	}
	for _, tc := range []struct {
		pages [][]string
		want  string
	}{
		{[][]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "e"}}, `repeated: "b" (pages 1 and 2)`},
		{[][]string{{"a", "b"}, {"d", "e"}}, `never listed: "c"`},
		{[][]string{{"a", "b", "c", "d", "e", "z"}}, `not expected: "z"`},
	} {
		if err := Walk(tc.pages, want, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Walk(%v) = %v, want %q", tc.pages, err, tc.want)
		}
	}
}
