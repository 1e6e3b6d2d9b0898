// Package telemetry sets up OpenTelemetry tracing: spans are exported over
// OTLP/HTTP when an endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT),
// and go nowhere otherwise, at no cost beyond a no-op call.
package telemetry
