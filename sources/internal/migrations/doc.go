// Package migrations reads the numbered schema migrations a store embeds
// (NNNN_what.sql). Each store applies them in its own way (SQLite one
// transaction each, Postgres all under an advisory lock); reading and
// ordering them is the same for both.
package migrations
