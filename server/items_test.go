package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/server"
)

// upserted is the answer of POST /v1/items, decoded strictly.
type upserted struct {
	Upserted int      `json:"upserted"`
	IDs      []string `json:"ids"`
}

func decodeUpserted(t testing.TB, r response) upserted {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var u upserted
	if err := json.Unmarshal(r.body, &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// getItem fetches an item; ok is false on 404 not_found.
func getItem(t testing.TB, base, id string) (it *h4r.Item, ok bool) {
	t.Helper()
	r := do(t, http.MethodGet, base+"/v1/items/"+url.PathEscape(id), nil)
	if r.status == http.StatusNotFound {
		if e := checkErrorShape(t, r); e.Code != h4r.ENOTFOUND {
			t.Fatalf("404 with code %q, want not_found", e.Code)
		}
		return nil, false
	}
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", id, r.status, r.body)
	}
	it = new(h4r.Item)
	if err := json.Unmarshal(r.body, it); err != nil {
		t.Fatal(err)
	}
	return it, true
}

func TestUpsert(t *testing.T) {
	tests := []struct {
		name string
		body string
		ids  []string
	}{
		{"one item", `{"id": "new-1", "kind": "note", "text": "a login note", "content": {"k": "v"}}`, []string{"new-1"}},
		{"a batch", `{"items": [
			{"id": "new-1", "text": "first"},
			{"id": "new-2", "text": "second", "links": [{"type": "follows", "target": "new-1"}]},
			{"id": "new-3", "text": "third", "metadata": {"importance": 1, "trust": 0}}]}`, []string{"new-1", "new-2", "new-3"}},
		{"a batch of one", `{"items": [{"id": "new-1", "text": "only"}]}`, []string{"new-1"}},
		{"an id repeated in a batch", `{"items": [{"id": "new-1", "text": "old"}, {"id": "new-1", "text": "new"}]}`, []string{"new-1", "new-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := newStack(t).serve(t)
			u := decodeUpserted(t, post(t, base+"/v1/items", tt.body))
			if u.Upserted != len(tt.ids) || !slices.Equal(u.IDs, tt.ids) {
				t.Errorf("answer %+v, want %d upserted with ids %v", u, len(tt.ids), tt.ids)
			}
			for _, id := range tt.ids {
				if _, ok := getItem(t, base, id); !ok {
					t.Errorf("%s is not in the store", id)
				}
			}
		})
	}
}

func TestGetItemReturnsStoreMetadata(t *testing.T) {
	s := newStack(t)
	base := s.serve(t)
	// The client's version, byte size and tokens are not the store's.
	body := `{"id": "meta-1", "kind": "note", "text": "login selector note", "content": {"selector": "#sign-in"},
		"metadata": {"trust": 0.7, "version": 99, "byteSize": 1, "tokens": 1, "accessCount": 5, "team": "qa"}}`
	decodeUpserted(t, post(t, base+"/v1/items", body))
	it, ok := getItem(t, base, "meta-1")
	if !ok {
		t.Fatal("meta-1 not found")
	}
	delivered, err := it.Delivered().Encode()
	if err != nil {
		t.Fatal(err)
	}
	cnt, err := counter()
	if err != nil {
		t.Fatal(err)
	}
	m := it.Metadata
	if m.Version != 1 {
		t.Errorf("version %d, want 1", m.Version)
	}
	if m.ByteSize != len(delivered) {
		t.Errorf("byteSize %d, want %d (the delivered form)", m.ByteSize, len(delivered))
	}
	if want := cnt.Count(string(delivered)); m.Tokens != want {
		t.Errorf("tokens %d, want %d", m.Tokens, want)
	}
	if m.AccessCount != 0 {
		t.Errorf("accessCount %d, want 0", m.AccessCount)
	}
	if !m.UpdatedAt.Equal(now) || !m.CreatedAt.Equal(now) {
		t.Errorf("updatedAt %v, createdAt %v: want the store clock %v", m.UpdatedAt, m.CreatedAt, now)
	}
	if m.TrustValue() != 0.7 || m.Extra["team"] != "qa" || it.Content["selector"] != "#sign-in" {
		t.Errorf("the item did not round-trip: %+v", it)
	}
}

func TestReplaceIncrementsVersion(t *testing.T) {
	base := newStack(t).serve(t)
	texts := []string{"first text", "second text", "third text"}
	for i, text := range texts {
		decodeUpserted(t, post(t, base+"/v1/items", `{"id": "ver-1", "text": "`+text+`"}`))
		it, ok := getItem(t, base, "ver-1")
		if !ok {
			t.Fatal("ver-1 not found")
		}
		if it.Metadata.Version != i+1 || it.Text != text {
			t.Errorf("after upsert %d: version %d text %q, want %d %q", i+1, it.Metadata.Version, it.Text, i+1, text)
		}
	}
}

func TestUpsertErrors(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		field  string
		absent []string // ids that must not be in the store afterwards
	}{
		{"batch with an out-of-range trust", `{"items": [{"id": "b-1", "text": "ok"}, {"id": "b-2", "text": "bad", "metadata": {"trust": 1.5}}, {"id": "b-3", "text": "ok"}]}`,
			"items[1].metadata.trust", []string{"b-1", "b-2", "b-3"}},
		{"batch with a missing text", `{"items": [{"id": "b-1", "text": "ok"}, {"id": "b-2", "text": "ok"}, {"id": "b-3"}]}`,
			"items[2].text", []string{"b-1", "b-2", "b-3"}},
		{"batch with a wrong type", `{"items": [{"id": "b-1", "text": 42}, {"id": "b-2", "text": "ok"}]}`,
			"items[0].text", []string{"b-1", "b-2"}},
		{"batch with an unknown field", `{"items": [{"id": "b-1", "text": "ok"}, {"id": "b-2", "text": "ok", "colour": "red"}]}`,
			"items[1].colour", []string{"b-1", "b-2"}},
		{"batch with a bad PII path", `{"items": [{"id": "b-1", "text": "ok", "metadata": {"containsPII": true, "piiFields": ["content.email"]}}]}`,
			"items[0].metadata.piiFields[0]", []string{"b-1"}},
		{"batch with a link without target", `{"items": [{"id": "b-1", "text": "ok"}, {"id": "b-2", "text": "ok", "links": [{"type": "fixes"}]}]}`,
			"items[1].links[0].target", []string{"b-1", "b-2"}},
		{"batch with an unknown link field", `{"items": [{"id": "b-1", "text": "ok", "links": [{"type": "fixes", "target": "b-0", "weight": 1}]}]}`,
			"items[0].links[0].weight", []string{"b-1"}},
		{"batch with a null item", `{"items": [{"id": "b-1", "text": "ok"}, null]}`, "items[1]", []string{"b-1"}},
		{"batch superseding a missing item", `{"items": [{"id": "b-1", "text": "ok"}, {"id": "b-2", "text": "ok", "links": [{"type": "supersedes", "target": "b-none"}]}]}`,
			"items[1].links[0].target", []string{"b-1", "b-2"}},
		{"batch with a supersedes cycle", `{"items": [{"id": "b-1", "text": "ok", "links": [{"type": "supersedes", "target": "b-2"}]}, {"id": "b-2", "text": "ok", "links": [{"type": "supersedes", "target": "b-1"}]}]}`,
			"items[0].links[0].target", []string{"b-1", "b-2"}},
		{"batch with validUntil before validFrom", `{"items": [{"id": "b-1", "text": "ok", "metadata": {"validFrom": "2026-05-01T00:00:00Z", "validUntil": "2026-04-01T00:00:00Z"}}]}`,
			"items[0].metadata.validUntil", []string{"b-1"}},
		{"batch whose invalid item replaces a fixture", `{"items": [{"id": "mem-root", "text": "overwritten"}, {"id": "b-2", "text": " "}]}`,
			"items[1].text", []string{"b-2"}},
		{"empty batch", `{"items": []}`, "items", nil},
		{"batch over the item limit", `{"items": [` + strings.Repeat(`{"id": "b-1", "text": "ok"},`, server.MaxBatchItems) + `{"id": "b-2", "text": "ok"}]}`, "items", []string{"b-1", "b-2"}},
		{"null batch", `{"items": null}`, "items", nil},
		{"items not a list", `{"items": {"id": "b-1", "text": "ok"}}`, "items", []string{"b-1"}},
		{"extra key beside items", `{"items": [{"id": "b-1", "text": "ok"}], "source": "import"}`, "source", []string{"b-1"}},
		{"one item without id", `{"text": "no id"}`, "id", nil},
		{"one item with a padded id", `{"id": " b-1", "text": "ok"}`, "id", []string{" b-1", "b-1"}},
		{"one item with an out-of-range sensitivity", `{"id": "b-1", "text": "ok", "metadata": {"sensitivity": 2}}`, "metadata.sensitivity", []string{"b-1"}},
		{"one item with a wrong metadata type", `{"id": "b-1", "text": "ok", "metadata": {"containsPII": "yes"}}`, "metadata.containsPII", []string{"b-1"}},
		{"one item with an unknown field", `{"id": "b-1", "text": "ok", "body": "x"}`, "body", []string{"b-1"}},
		{"malformed JSON", `{"id": "b-1", "text": "ok"`, "", []string{"b-1"}},
		{"not an object", `[{"id": "b-1", "text": "ok"}]`, "", []string{"b-1"}},
		{"empty body", ``, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := newStack(t).serve(t)
			r := post(t, base+"/v1/items", tt.body)
			e := checkErrorShape(t, r)
			if e.Code != h4r.EINVALID {
				t.Errorf("code %q, want invalid_argument", e.Code)
			}
			for _, id := range tt.absent {
				if _, ok := getItem(t, base, id); ok {
					t.Errorf("%s is in the store after a rejected request", id)
				}
			}
			// The fixture item a rejected batch named is unchanged.
			if root, ok := getItem(t, base, "mem-root"); !ok || root.Metadata.Version != 1 {
				t.Errorf("mem-root changed by a rejected request: %+v", root)
			}
			if e.Field != tt.field {
				t.Errorf("field %q, want %q (message %q)", e.Field, tt.field, e.Message)
			}
		})
	}
}

func TestDeleteItem(t *testing.T) {
	type step struct {
		method string
		id     string
		status int
		code   string // for errors
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"delete then get", []step{
			{http.MethodDelete, "mem-checkout", http.StatusNoContent, ""},
			{http.MethodGet, "mem-checkout", http.StatusNotFound, h4r.ENOTFOUND},
			{http.MethodGet, "mem-root", http.StatusOK, ""},
		}},
		{"delete twice", []step{
			{http.MethodDelete, "mem-checkout", http.StatusNoContent, ""},
			{http.MethodDelete, "mem-checkout", http.StatusNotFound, h4r.ENOTFOUND},
		}},
		{"delete a link target", []step{
			{http.MethodDelete, "mem-root", http.StatusNoContent, ""},
			{http.MethodGet, "mem-pii", http.StatusOK, ""},
		}},
		{"delete an unknown id", []step{{http.MethodDelete, "never-ingested", http.StatusNotFound, h4r.ENOTFOUND}}},
		{"get an unknown id", []step{{http.MethodGet, "never-ingested", http.StatusNotFound, h4r.ENOTFOUND}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := newStack(t).serve(t)
			for i, st := range tt.steps {
				r := do(t, st.method, base+"/v1/items/"+st.id, nil)
				if r.status != st.status {
					t.Fatalf("step %d, %s %s: status %d, want %d: %s", i, st.method, st.id, r.status, st.status, r.body)
				}
				if st.code != "" {
					if e := checkErrorShape(t, r); e.Code != st.code || e.Field != "id" {
						t.Errorf("step %d: error %+v, want code %s naming id", i, e, st.code)
					}
				}
				if st.status == http.StatusNoContent && len(r.body) != 0 {
					t.Errorf("step %d: 204 with a body: %s", i, r.body)
				}
			}
		})
	}
}

// TestItemIDsInPaths checks that an id reaches the store as ingested,
// whatever characters it holds and however the client escapes it.
func TestItemIDsInPaths(t *testing.T) {
	base := newStack(t).serve(t)
	tests := []struct {
		name string
		id   string
		path string // as sent after /v1/items/; "" means url.PathEscape(id)
	}{
		{name: "plain", id: "plain-1"},
		{name: "space", id: "with space"},
		{name: "slash", id: "team/login/1"},
		{name: "percent sign", id: "pct%41"},
		{name: "query and fragment characters", id: "q?x#y"},
		{name: "unicode", id: "ünïcödé-✓"},
		{name: "needless escape", id: "mem-needless", path: "%6Dem-needless"},
		{name: "escaped slash among plain text", id: "a/b", path: "a%2Fb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := json.Marshal(map[string]string{"id": tt.id, "text": "path test"})
			if err != nil {
				t.Fatal(err)
			}
			decodeUpserted(t, do(t, http.MethodPost, base+"/v1/items", body))
			path := tt.path
			if path == "" {
				path = url.PathEscape(tt.id)
			}
			r := do(t, http.MethodGet, base+"/v1/items/"+path, nil)
			if r.status != http.StatusOK {
				t.Fatalf("GET %s: status %d: %s", path, r.status, r.body)
			}
			var it h4r.Item
			if err := json.Unmarshal(r.body, &it); err != nil || it.ID != tt.id {
				t.Fatalf("GET %s returned id %q (err %v), want %q", path, it.ID, err, tt.id)
			}
			if r := do(t, http.MethodDelete, base+"/v1/items/"+path, nil); r.status != http.StatusNoContent {
				t.Fatalf("DELETE %s: status %d: %s", path, r.status, r.body)
			}
			if _, ok := getItem(t, base, tt.id); ok {
				t.Errorf("%q is still there after DELETE", tt.id)
			}
		})
	}
}

// TestReadingAnItemCountsAUse: an explicit read by id is a use of the
// item, which the frequency signal counts (H4R_ACCESS_COUNTING=use).
func TestReadingAnItemCountsAUse(t *testing.T) {
	st := newStack(t)
	base := st.serve(t)
	for range 2 {
		if r := do(t, http.MethodGet, base+"/v1/items/mem-fix", nil); r.status != http.StatusOK {
			t.Fatalf("GET: %d %s", r.status, r.body)
		}
	}
	// Counts are written in the background, in batches.
	deadline := time.Now().Add(20 * time.Second)
	for {
		it, err := st.store.Get(t.Context(), "mem-fix")
		if err != nil {
			t.Fatal(err)
		}
		if it.Metadata.AccessCount == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("accessCount = %d after two reads, want 2", it.Metadata.AccessCount)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
