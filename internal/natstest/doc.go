// Package natstest gives tests the NATS server with JetStream that
// H4R_TEST_NATS_URL names (.ci/run sets it and starts the machine's
// server), and names of their own so that tests never share a stream.
package natstest
