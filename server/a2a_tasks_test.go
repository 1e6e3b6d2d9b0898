package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/server"
)

// rpcAnswer is a JSON-RPC response, its result left encoded.
type rpcAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rpc calls method at base's A2A endpoint with key, speaking version (the
// A2A-Version header; empty: none), and decodes the answer.
func rpc(t *testing.T, base, key, version, method string, params any) rpcAnswer {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	header := bearer(key)
	if version != "" {
		header = append(header, "A2A-Version", version)
	}
	r := do(t, http.MethodPost, base+"/v1/a2a/rpc", body, header...)
	if r.status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", method, r.status, r.body)
	}
	var a rpcAnswer
	if err := json.Unmarshal(r.body, &a); err != nil || a.JSONRPC != "2.0" || string(a.ID) != "7" {
		t.Fatalf("%s: not a JSON-RPC answer to id 7 (%v): %s", method, err, r.body)
	}
	return a
}

// v1Send sends text over 1.0 and returns the task's id and its pack.
func v1Send(t *testing.T, base, key, text string) (string, map[string]any) {
	t.Helper()
	a := rpc(t, base, key, "1.0", "SendMessage", map[string]any{"message": map[string]any{
		"messageId": "m-1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}})
	if a.Error != nil {
		t.Fatalf("SendMessage: %+v", a.Error)
	}
	var res struct{ Task v1TaskOut }
	if err := json.Unmarshal(a.Result, &res); err != nil {
		t.Fatalf("SendMessage result: %v: %s", err, a.Result)
	}
	return res.Task.ID, res.Task.pack(t)
}

// v03Send sends text over 0.3 and returns the task's id and its pack.
func v03Send(t *testing.T, base, key, text string) (string, map[string]any) {
	t.Helper()
	a := rpc(t, base, key, "", "message/send", map[string]any{"message": map[string]any{
		"kind": "message", "messageId": "m-1", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": text}}}})
	if a.Error != nil {
		t.Fatalf("message/send: %+v", a.Error)
	}
	var task struct {
		ID        string `json:"id"`
		Artifacts []struct {
			Parts []struct {
				Data map[string]any `json:"data"`
			} `json:"parts"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(a.Result, &task); err != nil || len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 {
		t.Fatalf("message/send result: %v: %s", err, a.Result)
	}
	return task.ID, task.Artifacts[0].Parts[0].Data
}

// senders make a task over each protocol version.
var senders = []struct {
	name string
	send func(t *testing.T, base, key, text string) (string, map[string]any)
}{{"made over 1.0", v1Send}, {"made over 0.3", v03Send}}

// v1TaskOut is a 1.0 task as the wire has it.
type v1TaskOut struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State     string `json:"state"`
		Timestamp string `json:"timestamp"`
	} `json:"status"`
	Artifacts []struct {
		ArtifactID string `json:"artifactId"`
		Name       string `json:"name"`
		Parts      []struct {
			Data      map[string]any `json:"data"`
			MediaType string         `json:"mediaType"`
		} `json:"parts"`
	} `json:"artifacts"`
	History []struct {
		MessageID string `json:"messageId"`
		TaskID    string `json:"taskId"`
		Role      string `json:"role"`
		Parts     []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"history"`
}

func (task v1TaskOut) pack(t *testing.T) map[string]any {
	t.Helper()
	if task.Status.State != "TASK_STATE_COMPLETED" || len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 ||
		task.Artifacts[0].Parts[0].Data == nil {
		t.Fatalf("task %+v: want a completed task with one data artifact", task)
	}
	return task.Artifacts[0].Parts[0].Data
}

func v1Get(t *testing.T, base, key, id string) (v1TaskOut, rpcAnswer) {
	t.Helper()
	a := rpc(t, base, key, "1.0", "GetTask", map[string]any{"id": id})
	var task v1TaskOut
	if a.Error == nil {
		if err := json.Unmarshal(a.Result, &task); err != nil {
			t.Fatalf("GetTask result: %v: %s", err, a.Result)
		}
	}
	return task, a
}

// TestA2ATaskOfAnotherKeyIsNotFound: a task belongs to the key that made
// it. Any other key, whatever its clearance, is told that it does not
// exist, as for an id never made, in both protocol versions and for every
// method naming a task.
func TestA2ATaskOfAnotherKeyIsNotFound(t *testing.T) {
	for _, sender := range senders {
		t.Run(sender.name, func(t *testing.T) { checkTaskOfAnotherKey(t, sender.send) })
	}
}

func checkTaskOfAnotherKey(t *testing.T, sendAs func(t *testing.T, base, key, text string) (string, map[string]any)) {
	base := newAuthStack(t).serve(t)
	id, _ := sendAs(t, base, restrictedKey, "ops runbook load balancer login credentials")
	tests := []struct {
		name, version, method string
		params                any
	}{
		{"1.0 GetTask", "1.0", "GetTask", map[string]any{"id": id}},
		{"1.0 CancelTask", "1.0", "CancelTask", map[string]any{"id": id}},
		{"1.0 SubscribeToTask", "1.0", "SubscribeToTask", map[string]any{"id": id}},
		{"1.0 SendMessage continuing the task", "1.0", "SendMessage", map[string]any{"message": map[string]any{
			"messageId": "m-2", "taskId": id, "role": "ROLE_USER", "parts": []any{map[string]any{"text": "login"}}}}},
		{"0.3 tasks/get", "", "tasks/get", map[string]any{"id": id}},
		{"0.3 tasks/cancel", "", "tasks/cancel", map[string]any{"id": id}},
		{"0.3 message/send continuing the task", "", "message/send", map[string]any{"message": map[string]any{
			"kind": "message", "messageId": "m-3", "taskId": id, "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "login"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, key := range []string{publicKey, healerKey} {
				a := rpc(t, base, key, tt.version, tt.method, tt.params)
				if a.Error == nil || a.Error.Code != -32001 {
					t.Fatalf("key %s: answer %+v %s, want task not found (-32001)", key, a.Error, a.Result)
				}
				if bytes.Contains(a.Result, []byte("OPS-ONLY")) {
					t.Fatalf("key %s read the task: %s", key, a.Result)
				}
			}
			if tt.method == "GetTask" || tt.method == "tasks/get" {
				if a := rpc(t, base, restrictedKey, tt.version, tt.method, tt.params); a.Error != nil {
					t.Fatalf("the owner cannot read its own task: %+v", a.Error)
				}
			}
		})
	}
	t.Run("1.0 ListTasks", func(t *testing.T) {
		a := rpc(t, base, healerKey, "1.0", "ListTasks", map[string]any{"includeArtifacts": true})
		if a.Error != nil || bytes.Contains(a.Result, []byte(id)) {
			t.Fatalf("another key's list: %+v %s", a.Error, a.Result)
		}
		if a := rpc(t, base, restrictedKey, "1.0", "ListTasks", map[string]any{}); a.Error != nil || !bytes.Contains(a.Result, []byte(id)) {
			t.Fatalf("the owner's list does not hold its task: %+v %s", a.Error, a.Result)
		}
	})
}

// countingPacker counts the packs built.
type countingPacker struct {
	server.ContextPacker
	runs atomic.Int64
}

func (c *countingPacker) Run(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error) {
	c.runs.Add(1)
	return c.ContextPacker.Run(ctx, spec, plan)
}

// newPolicyStack is the auth stack with the policy reported to the server
// (so that a stored pack's revision can be checked), on the real clock,
// and a packer that counts its packs.
func newPolicyStack(t *testing.T, opts ...server.Option) (*stack, *countingPacker) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(t.Context(), cfg, app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if _, err := a.Store.Upsert(t.Context(), fixtureItems(t)); err != nil {
		t.Fatal(err)
	}
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	packer := &countingPacker{ContextPacker: a.Engine}
	opts = append([]server.Option{server.WithLogger(quiet), server.WithRequestTimeout(cfg.RequestTimeout),
		server.WithAuthenticator(keys), server.WithPolicy(a.Policy)}, opts...)
	return &stack{srv: server.New(packer, a.Store, opts...), store: a.Store}, packer
}

// TestA2AStoredTaskNeverReturnsDeletedOrRestrictedItems: a stored task's
// pack is served as stored only while nothing it was built from changed;
// after an item is deleted, or restricted away from the caller, GetTask
// builds the pack again and the item is gone from it.
func TestA2AStoredTaskNeverReturnsDeletedOrRestrictedItems(t *testing.T) {
	for _, sender := range senders {
		t.Run(sender.name, func(t *testing.T) { checkStoredTaskResliced(t, sender.send) })
	}
}

func checkStoredTaskResliced(t *testing.T, sendAs func(t *testing.T, base, key, text string) (string, map[string]any)) {
	st, packer := newPolicyStack(t)
	base := st.serve(t)
	id, pack := sendAs(t, base, healerKey, "login selector test failures")
	ids := resultIDs(t, pack)
	has := func(ids []string, want string) bool {
		for _, id := range ids {
			if id == want {
				return true
			}
		}
		return false
	}
	for _, want := range []string{"mem-fix", "mem-qa"} {
		if !has(ids, want) {
			t.Fatalf("the pack lacks %s (results %v): the test shows nothing", want, ids)
		}
	}

	runs := packer.runs.Load()
	task, a := v1Get(t, base, healerKey, id)
	if a.Error != nil {
		t.Fatal(a.Error)
	}
	if got := resultIDs(t, task.pack(t)); strings.Join(got, ",") != strings.Join(ids, ",") || packer.runs.Load() != runs {
		t.Fatalf("unchanged task: results %v after %d more packs, want %v from the store, no pack built", got, packer.runs.Load()-runs, ids)
	}

	ctx := t.Context()
	if err := st.store.Delete(ctx, "mem-fix"); err != nil {
		t.Fatal(err)
	}
	qa, err := st.store.Get(ctx, "mem-qa")
	if err != nil {
		t.Fatal(err)
	}
	qa.Metadata.RestrictedToGroups = []string{"ops"} // the healer is in qa only
	if _, err := st.store.Upsert(ctx, []h4r.Item{*qa}); err != nil {
		t.Fatal(err)
	}

	for _, read := range []struct {
		name string
		get  func() []byte
	}{
		{"1.0 GetTask", func() []byte {
			task, a := v1Get(t, base, healerKey, id)
			if a.Error != nil {
				t.Fatal(a.Error)
			}
			raw, _ := json.Marshal(task.pack(t))
			return raw
		}},
		{"1.0 ListTasks with artifacts", func() []byte {
			return rpc(t, base, healerKey, "1.0", "ListTasks", map[string]any{"includeArtifacts": true}).Result
		}},
		{"0.3 tasks/get", func() []byte {
			a := rpc(t, base, healerKey, "", "tasks/get", map[string]any{"id": id})
			if a.Error != nil {
				t.Fatal(a.Error)
			}
			return a.Result
		}},
	} {
		t.Run(read.name, func(t *testing.T) {
			raw := read.get()
			for _, gone := range []string{`"mem-fix"`, `"mem-qa"`, "QA runbook"} {
				if bytes.Contains(raw, []byte(gone)) {
					t.Errorf("the stored task still carries %s: %.300s", gone, raw)
				}
			}
			if !bytes.Contains(raw, []byte(`"mem-root"`)) {
				t.Errorf("the rebuilt pack lost mem-root, which nothing changed: %.300s", raw)
			}
		})
	}
}

// TestA2ATasksAreBounded: tasks past H4R_A2A_TASK_MAX are dropped oldest
// first, and a task past its TTL is not found.
func TestA2ATasksAreBounded(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		base := newAuthStack(t, server.WithA2A(server.A2AOptions{TaskMax: 3})).serve(t)
		var ids []string
		for range 6 {
			id, _ := v1Send(t, base, healerKey, "checkout")
			ids = append(ids, id)
		}
		for i, id := range ids {
			_, a := v1Get(t, base, healerKey, id)
			if kept := a.Error == nil; kept != (i >= 3) {
				t.Errorf("task %d of 6: kept %v (%+v), want only the newest 3", i+1, kept, a.Error)
			}
		}
		var list struct {
			Tasks     []v1TaskOut `json:"tasks"`
			TotalSize int         `json:"totalSize"`
		}
		a := rpc(t, base, healerKey, "1.0", "ListTasks", map[string]any{})
		if err := json.Unmarshal(a.Result, &list); err != nil || list.TotalSize != 3 || len(list.Tasks) != 3 || list.Tasks[0].ID != ids[5] {
			t.Errorf("ListTasks: %v %+v %s, want the newest 3, newest first", err, a.Error, a.Result)
		}
	})
	t.Run("ttl", func(t *testing.T) {
		base := newAuthStack(t, server.WithA2A(server.A2AOptions{TaskTTL: 300 * time.Millisecond})).serve(t)
		id, _ := v1Send(t, base, healerKey, "checkout")
		if _, a := v1Get(t, base, healerKey, id); a.Error != nil {
			t.Fatalf("a fresh task: %+v", a.Error)
		}
		time.Sleep(400 * time.Millisecond)
		if _, a := v1Get(t, base, healerKey, id); a.Error == nil || a.Error.Code != -32001 {
			t.Fatalf("a task past its TTL: %+v, want not found", a.Error)
		}
	})
}

// TestA2ACardURLIgnoresRequestHeaders: the card's URLs come from the
// configured public URL, or else the address the connection came in on;
// never from Host or X-Forwarded-*.
func TestA2ACardURLIgnoresRequestHeaders(t *testing.T) {
	spoof := []string{"Host", "evil.example", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "evil.example"}
	tests := []struct {
		name    string
		opts    []server.Option
		version string
		want    func(base string) string
	}{
		{"0.3 card, listen address", nil, "", func(base string) string { return base + "/v1/a2a/rpc" }},
		{"1.0 card, listen address", nil, "1.0", func(base string) string { return base + "/v1/a2a/rpc" }},
		{"0.3 card, public URL", []server.Option{server.WithA2A(server.A2AOptions{PublicURL: "https://h4r.example.com/x/"})}, "",
			func(string) string { return "https://h4r.example.com/x/v1/a2a/rpc" }},
		{"1.0 card, public URL", []server.Option{server.WithA2A(server.A2AOptions{PublicURL: "https://h4r.example.com/x"})}, "1.0",
			func(string) string { return "https://h4r.example.com/x/v1/a2a/rpc" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStack(t, append([]server.Option{server.WithAnyHost()}, tt.opts...)...)
			base := st.serve(t)
			header := spoof
			if tt.version != "" {
				header = append(slicesClone(spoof), "A2A-Version", tt.version)
			}
			r := do(t, http.MethodGet, base+"/.well-known/agent-card.json", nil, header...)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var card struct {
				URL                 string `json:"url"`
				SupportedInterfaces []struct {
					URL             string `json:"url"`
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"supportedInterfaces"`
			}
			if err := json.Unmarshal(r.body, &card); err != nil {
				t.Fatal(err)
			}
			want := tt.want(base)
			if tt.version == "" && card.URL != want {
				t.Errorf("url %q, want %q", card.URL, want)
			}
			if len(card.SupportedInterfaces) != 2 {
				t.Fatalf("supportedInterfaces %+v, want 1.0 and 0.3", card.SupportedInterfaces)
			}
			for _, i := range card.SupportedInterfaces {
				if i.URL != want {
					t.Errorf("interface %s url %q, want %q", i.ProtocolVersion, i.URL, want)
				}
			}
			if bytes.Contains(r.body, []byte("evil.example")) {
				t.Errorf("the card echoes a request header: %s", r.body)
			}
		})
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// TestA2AV1WireShapes pins the 1.0 JSON the SDKs read: the card, a task,
// the stream's events, and the errors.
func TestA2AV1WireShapes(t *testing.T) {
	base := newAuthStack(t).serve(t)

	t.Run("card", func(t *testing.T) {
		r := do(t, http.MethodGet, base+"/.well-known/agent-card.json", nil, "A2A-Version", "1.0")
		var card map[string]any
		if err := json.Unmarshal(r.body, &card); err != nil {
			t.Fatal(err)
		}
		for _, legacy := range []string{"url", "preferredTransport", "protocolVersion", "security"} {
			if _, ok := card[legacy]; ok {
				t.Errorf("the 1.0 card has the 0.3 field %s", legacy)
			}
		}
		scheme, _ := card["securitySchemes"].(map[string]any)["bearer"].(map[string]any)
		if _, ok := scheme["httpAuthSecurityScheme"]; !ok || card["capabilities"].(map[string]any)["streaming"] != true {
			t.Errorf("card %s", r.body)
		}
		if !strings.Contains(r.header.Get("Vary"), "A2A-Version") {
			t.Errorf("Vary %q, want A2A-Version (the card depends on it)", r.header.Get("Vary"))
		}
	})

	var id string
	t.Run("SendMessage", func(t *testing.T) {
		a := rpc(t, base, healerKey, "1.0", "SendMessage", map[string]any{"message": map[string]any{
			"messageId": "m-1", "role": "ROLE_USER", "parts": []any{map[string]any{"data": map[string]any{"query": map[string]any{"text": "checkout intermittently"}, "limit": 1}}}}})
		var res struct{ Task v1TaskOut }
		if a.Error != nil || json.Unmarshal(a.Result, &res) != nil {
			t.Fatalf("%+v %s", a.Error, a.Result)
		}
		task := res.Task
		id = task.ID
		if ids := resultIDs(t, task.pack(t)); len(ids) != 1 || ids[0] != "mem-checkout" {
			t.Errorf("results %v", ids)
		}
		if task.Artifacts[0].Name != "context_pack" || task.Artifacts[0].ArtifactID == "" || task.Artifacts[0].Parts[0].MediaType != "application/json" {
			t.Errorf("artifact %+v", task.Artifacts[0])
		}
		if _, err := time.Parse(time.RFC3339Nano, task.Status.Timestamp); err != nil || task.ContextID == "" {
			t.Errorf("status timestamp %q context %q", task.Status.Timestamp, task.ContextID)
		}
		if len(task.History) != 1 || task.History[0].Role != "ROLE_USER" || task.History[0].TaskID != task.ID {
			t.Errorf("history %+v", task.History)
		}
	})

	t.Run("SendStreamingMessage", func(t *testing.T) {
		body := `{"jsonrpc": "2.0", "id": "s-1", "method": "SendStreamingMessage", "params": {"message": {"messageId": "m-4", "role": "ROLE_USER", "parts": [{"text": "login"}]}}}`
		r := post(t, base+"/v1/a2a/rpc", body, append(bearer(healerKey), "A2A-Version", "1.0", "Accept", "text/event-stream")...)
		if !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("content type %q: %s", r.header.Get("Content-Type"), r.body)
		}
		var kinds []string
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				ID     string                     `json:"id"`
				Result map[string]json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.ID != "s-1" || len(ev.Result) != 1 {
				t.Fatalf("event %v: %s", err, data)
			}
			for k, v := range ev.Result {
				kinds = append(kinds, k)
				if k == "statusUpdate" && !bytes.Contains(v, []byte(`"TASK_STATE_COMPLETED"`)) {
					t.Errorf("final status %s", v)
				}
			}
		}
		if strings.Join(kinds, ",") != "task,artifactUpdate,statusUpdate" {
			t.Errorf("events %v", kinds)
		}
	})

	errs := []struct {
		name, version, method string
		params                any
		code                  int
		want                  string
	}{
		{"unknown version", "2.0", "GetTask", map[string]any{"id": "x"}, -32009, "A2A-Version"},
		{"unknown method", "1.0", "GetTasks", map[string]any{}, -32601, "GetTasks"},
		{"missing role", "1.0", "SendMessage", map[string]any{"message": map[string]any{"messageId": "m", "parts": []any{map[string]any{"text": "x"}}}}, -32602, "message.role"},
		{"data part not an object", "1.0", "SendMessage", map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{"data": "x"}}}}, -32602, "parts[0].data"},
		{"unknown field in the ContextRequest", "1.0", "SendMessage", map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{"data": map[string]any{"query": map[string]any{"text": "x"}, "clearance": "restricted"}}}}}, -32602, "parts[0].data.clearance"},
		{"cancel an ended task", "1.0", "CancelTask", map[string]any{"id": "(the task)"}, -32002, "ended"},
		{"list with a bad page size", "1.0", "ListTasks", map[string]any{"pageSize": 1000}, -32602, "pageSize"},
		{"push notifications", "1.0", "CreateTaskPushNotificationConfig", map[string]any{"taskId": "x"}, -32003, "push"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			params := tt.params
			if m, ok := params.(map[string]any); ok && m["id"] == "(the task)" {
				params = map[string]any{"id": id}
			}
			a := rpc(t, base, healerKey, tt.version, tt.method, params)
			if a.Error == nil || a.Error.Code != tt.code || !strings.Contains(a.Error.Message, tt.want) {
				t.Errorf("error %+v, want code %d mentioning %q", a.Error, tt.code, tt.want)
			}
		})
	}
}

// TestA2ACancelStopsAWorkingTask: CancelTask while the pack is being built
// ends the task canceled, and it stays canceled.
func TestA2ACancelStopsAWorkingTask(t *testing.T) {
	started := make(chan struct{}, 1)
	blocking := func(next server.ContextPacker) server.ContextPacker {
		return packerFunc(func(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	a, err := app.Open(t.Context(), cfg, app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(blocking(a.Engine), a.Store, server.WithLogger(quiet), server.WithAuthenticator(keys), server.WithRequestTimeout(30*time.Second))
	base := (&stack{srv: srv, store: a.Store}).serve(t)

	type result struct {
		a   rpcAnswer
		err error
	}
	sent := make(chan result, 1)
	go func() {
		body := `{"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "login"}]}}}`
		r, err := send(http.MethodPost, base+"/v1/a2a/rpc", []byte(body), append(bearer(healerKey), "A2A-Version", "1.0")...)
		var ans rpcAnswer
		if err == nil {
			err = json.Unmarshal(r.body, &ans)
		}
		sent <- result{ans, err}
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the pack build did not start")
	}
	list := rpc(t, base, healerKey, "1.0", "ListTasks", map[string]any{})
	var tasks struct{ Tasks []v1TaskOut }
	if err := json.Unmarshal(list.Result, &tasks); err != nil || len(tasks.Tasks) != 1 || tasks.Tasks[0].Status.State != "TASK_STATE_WORKING" {
		t.Fatalf("ListTasks while working: %v %s", err, list.Result)
	}
	id := tasks.Tasks[0].ID
	if a := rpc(t, base, publicKey, "1.0", "CancelTask", map[string]any{"id": id}); a.Error == nil || a.Error.Code != -32001 {
		t.Fatalf("another key canceled the task: %+v %s", a.Error, a.Result)
	}
	c := rpc(t, base, healerKey, "1.0", "CancelTask", map[string]any{"id": id})
	if c.Error != nil || !bytes.Contains(c.Result, []byte("TASK_STATE_CANCELED")) {
		t.Fatalf("CancelTask: %+v %s", c.Error, c.Result)
	}
	var res result
	select {
	case res = <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("SendMessage did not end after the cancel")
	}
	if res.err != nil || !bytes.Contains(res.a.Result, []byte("TASK_STATE_CANCELED")) {
		t.Fatalf("SendMessage after the cancel: %v %s", res.err, res.a.Result)
	}
	if task, a := v1Get(t, base, healerKey, id); a.Error != nil || task.Status.State != "TASK_STATE_CANCELED" {
		t.Fatalf("GetTask after the cancel: %+v %+v", a.Error, task.Status)
	}
}

type packerFunc func(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error)

func (f packerFunc) Run(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error) {
	return f(ctx, spec, plan)
}
