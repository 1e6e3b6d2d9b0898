package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "validate: reading the manifests:", err)
		os.Exit(1)
	}
	n, err := validate(data)
	if err != nil {
		fmt.Fprintln(os.Stderr, "validate:", err)
		os.Exit(1)
	}
	fmt.Printf("%d manifests valid\n", n)
}

// kinds maps apiVersion/kind to a new typed object.
var kinds = map[string]func() any{
	"v1/ConfigMap":                           func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                              func() any { return &corev1.Secret{} },
	"v1/Service":                             func() any { return &corev1.Service{} },
	"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
	"networking.k8s.io/v1/Ingress":           func() any { return &networkingv1.Ingress{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
}

// validate checks every document of a multi-document YAML stream and
// returns how many it checked.
func validate(stream []byte) (int, error) {
	var errs []error
	n := 0
	for i, doc := range strings.Split(string(stream), "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: not YAML: %w", i, err))
			continue
		}
		var head struct{ APIVersion, Kind string }
		var meta struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		_ = json.Unmarshal(js, &head)
		_ = json.Unmarshal(js, &meta)
		name := fmt.Sprintf("document %d (%s/%s %s)", i, head.APIVersion, head.Kind, meta.Metadata.Name)
		newObj, ok := kinds[head.APIVersion+"/"+head.Kind]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no known Kubernetes type for apiVersion %q kind %q", name, head.APIVersion, head.Kind))
			continue
		}
		obj := newObj()
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if meta.Metadata.Name == "" {
			errs = append(errs, fmt.Errorf("%s: metadata.name is required", name))
		}
		if err := required(obj); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		n++
	}
	return n, errors.Join(errs...)
}

// required checks what the API server would refuse that the types cannot
// say: the fields a workload needs.
func required(obj any) error {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o.Spec.Selector == nil || len(o.Spec.Selector.MatchLabels) == 0 {
			return errors.New("spec.selector.matchLabels is required")
		}
		for k, v := range o.Spec.Selector.MatchLabels {
			if o.Spec.Template.Labels[k] != v {
				return fmt.Errorf("spec.template.metadata.labels must match the selector (%s)", k)
			}
		}
		if len(o.Spec.Template.Spec.Containers) == 0 {
			return errors.New("spec.template.spec.containers is required")
		}
		for _, c := range o.Spec.Template.Spec.Containers {
			if c.Name == "" || c.Image == "" {
				return errors.New("every container needs a name and an image")
			}
		}
	case *corev1.Service:
		if len(o.Spec.Ports) == 0 {
			return errors.New("spec.ports is required")
		}
	case *policyv1.PodDisruptionBudget:
		if o.Spec.Selector == nil {
			return errors.New("spec.selector is required")
		}
	}
	return nil
}

// stripComments drops YAML comment lines, so that a document of only
// comments (helm's "# Source:" headers) counts as empty.
func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
