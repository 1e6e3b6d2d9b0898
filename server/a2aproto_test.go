package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
)

// a2aClient resolves the card at base and builds an SDK client that sends
// key as the card's bearer credential (empty: no credential).
func a2aClient(t *testing.T, base, key string) (*a2aclient.Client, context.Context, *a2a.AgentCard) {
	t.Helper()
	ctx := t.Context()
	card, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		t.Fatalf("resolving the agent card: %v", err)
	}
	creds := a2aclient.NewInMemoryCredentialsStore()
	if key != "" {
		creds.Set("s", "bearer", a2aclient.AuthCredential(key))
	}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithInterceptors(&a2aclient.AuthInterceptor{Service: creds}))
	if err != nil {
		t.Fatalf("client from the card: %v", err)
	}
	return client, a2aclient.WithSessionID(ctx, "s"), card
}

// packOf returns the pack the task's context_pack artifact carries.
func packOf(t *testing.T, res a2a.SendMessageResult) map[string]any {
	t.Helper()
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("result %T, want a task", res)
	}
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task state %s (%+v)", task.Status.State, task.Status.Message)
	}
	if len(task.Artifacts) != 1 || task.Artifacts[0].Name != "context_pack" || len(task.Artifacts[0].Parts) != 1 {
		t.Fatalf("artifacts %+v", task.Artifacts)
	}
	dp, ok := task.Artifacts[0].Parts[0].(a2a.DataPart)
	if !ok {
		t.Fatalf("artifact part %T, want data", task.Artifacts[0].Parts[0])
	}
	return dp.Data
}

func resultIDs(t *testing.T, pack map[string]any) []string {
	t.Helper()
	results, _ := pack["results"].([]any)
	var ids []string
	for _, r := range results {
		ids = append(ids, r.(map[string]any)["id"].(string))
	}
	return ids
}

// TestA2AProtocolWithTheSDK: the SDK's own client reads the card (bearer
// declared), sends message/send with a text part and with a data part,
// and gets the pack as a data artifact; what it cannot answer is a
// protocol error with the reason.
func TestA2AProtocolWithTheSDK(t *testing.T) {
	base := newAuthStack(t).serve(t)
	client, ctx, card := a2aClient(t, base, healerKey)
	if card.URL != base+"/v1/a2a/rpc" || card.PreferredTransport != a2a.TransportProtocolJSONRPC {
		t.Errorf("card url %q transport %q", card.URL, card.PreferredTransport)
	}
	if s, ok := card.SecuritySchemes["bearer"].(a2a.HTTPAuthSecurityScheme); !ok || !strings.EqualFold(s.Scheme, "bearer") || len(card.Security) != 1 {
		t.Errorf("card security %+v %+v", card.SecuritySchemes, card.Security)
	}

	t.Run("text part", func(t *testing.T) {
		res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "login selector test failures"})})
		if err != nil {
			t.Fatal(err)
		}
		pack := packOf(t, res)
		if ids := resultIDs(t, pack); len(ids) == 0 || pack["status"] != "ok" {
			t.Errorf("pack status %v results %v", pack["status"], ids)
		}
		if slice := pack["agentSlice"].(map[string]any); slice["specialistId"] != "playwright_healer" {
			t.Errorf("the pack was built for %v, want the key's principal", slice["specialistId"])
		}
	})
	t.Run("data part holding a ContextRequest", func(t *testing.T) {
		req := map[string]any{"query": map[string]any{"type": "keyword", "text": "checkout intermittently"}, "limit": 1}
		res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: req})})
		if err != nil {
			t.Fatal(err)
		}
		if ids := resultIDs(t, packOf(t, res)); len(ids) != 1 || ids[0] != "mem-checkout" {
			t.Errorf("results %v, want [mem-checkout] (limit 1)", ids)
		}
	})

	bad := []struct {
		name  string
		parts []a2a.Part
		want  string
	}{
		{"no text and no data part", []a2a.Part{a2a.FilePart{File: a2a.FileURI{URI: "https://example.com/q.txt"}}}, "no text part and no data part"},
		{"blank text only", []a2a.Part{a2a.TextPart{Text: "   "}}, "no text part and no data part"},
		{"data part with an unknown field", []a2a.Part{a2a.DataPart{Data: map[string]any{"query": map[string]any{"text": "x"}, "clearance": "restricted"}}}, "parts[0].data.clearance"},
		{"data part naming a specialist", []a2a.Part{a2a.DataPart{Data: map[string]any{"query": map[string]any{"text": "x"}, "specialist": map[string]any{"id": "security_lead"}}}}, "specialist comes from the API key"},
		{"data part with a bad query type", []a2a.Part{a2a.DataPart{Data: map[string]any{"query": map[string]any{"type": "fuzzy", "text": "x"}}}}, "parts[0].data.query.type"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, tt.parts...)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a protocol error mentioning %q", err, tt.want)
			}
		})
	}
}

// TestA2AProtocolNeedsTheKey: message/send without a key is refused with
// 401; the card, which says how to authenticate, is public.
func TestA2AProtocolNeedsTheKey(t *testing.T) {
	base := newAuthStack(t).serve(t)
	if r := do(t, http.MethodGet, base+"/.well-known/agent-card.json", nil); r.status != http.StatusOK {
		t.Fatalf("card without a key: %d %s", r.status, r.body)
	}
	client, ctx, _ := a2aClient(t, base, "")
	_, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "login"})})
	if err == nil {
		t.Fatal("message/send without a key succeeded")
	}
	r := post(t, base+"/v1/a2a/rpc", `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}`)
	if r.status != http.StatusUnauthorized {
		t.Errorf("raw message/send without a key: %d %s", r.status, r.body)
	}
}

// TestA2AProtocolNeverDeliversRestrictedItemsToAPublicKey: the pack goes
// through the policy slicer with the key's clearance.
func TestA2AProtocolNeverDeliversRestrictedItemsToAPublicKey(t *testing.T) {
	base := newAuthStack(t).serve(t)
	text := a2a.TextPart{Text: "ops runbook load balancer login credentials staging payment incident"}
	pub, ctx, _ := a2aClient(t, base, publicKey)
	res, err := pub.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, text)})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(packOf(t, res))
	for _, secret := range []string{"OPS-ONLY-RUNBOOK", "TOPSECRET", "CONFIDENTIAL-INCIDENT-NOTE", `"mem-ops"`, `"mem-qa"`} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the public key's pack contains %s", secret)
		}
	}
	restricted, ctx, _ := a2aClient(t, base, restrictedKey)
	res, err = restricted.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, text)})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, id := range resultIDs(t, packOf(t, res)) {
		found = found || id == "mem-ops"
	}
	if !found {
		t.Error("the restricted key did not get mem-ops either: the test shows nothing")
	}
}
