// Package access batches the access counts a store keeps for delivered
// items: RecordAccess only updates a map in memory, and a background loop
// writes the counts in one transaction per interval, so that serving a
// pack never waits on a write. The SQLite and Postgres stores share it;
// each supplies the statement that writes a batch.
package access
