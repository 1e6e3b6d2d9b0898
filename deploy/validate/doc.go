// Command validate checks Kubernetes manifests (the output of helm
// template) against the Kubernetes API types: each document is decoded
// into the typed object of its apiVersion and kind, refusing unknown and
// misspelt fields, and the fields Kubernetes requires are checked. It is
// its own module so that H4R's module does not depend on the Kubernetes
// API packages.
//
//	helm template deploy/charts/h4r | go run ./deploy/validate
package main
