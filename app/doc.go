// Package app wires one H4R service from a config.Config: the store, the
// policy engine, the slicer, the pack builder and the request engine. The
// CLI, the server and end-to-end tests all build the service here, so tests
// exercise the production wiring.
package app
