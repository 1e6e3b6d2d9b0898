package main

import (
	"strings"
	"testing"
)

// TestValidate: the checker refuses what the API server would.
func TestValidate(t *testing.T) {
	good := `apiVersion: v1
kind: Service
metadata:
  name: s
spec:
  ports: [{port: 80}]
`
	tests := []struct {
		name, doc, want string
	}{
		{"valid", good, ""},
		{"misspelt field", strings.Replace(good, "ports:", "portz:", 1), `unknown field "portz"`},
		{"unknown kind", "apiVersion: v9\nkind: Thing\nmetadata: {name: x}\n", "no known Kubernetes type"},
		{"no name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "metadata.name is required"},
		{"wrong type", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: eighty}]}\n", "cannot unmarshal"},
		{"deployment selector mismatch", `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: b}}
    spec: {containers: [{name: c, image: i}]}
`, "must match the selector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := validate([]byte("# Source: x\n---\n" + tt.doc))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
