// Package scaleout holds the scale-out test: three NATS servers in one
// JetStream cluster, three `h4r serve` processes over one Postgres
// database, steady load, and a SIGKILL of one NATS server and one H4R
// replica. It runs only with H4R_SCALEOUT=1 (docs/operations.md,
// "Scale-out").
package scaleout
