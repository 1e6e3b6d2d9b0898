// Package config reads H4R's settings from environment variables.
//
// Every variable is declared once, in the table that Vars returns: its name,
// its default as text, and a description. FromEnv parses that table, Default
// is the table's defaults parsed, EnvExample renders it as the committed
// .env.example, and a test keeps that file from drifting. Invalid values are
// reported all at once, each as an *h4r.Error whose Field is the variable's
// name, so that the program can refuse to start with a message saying which
// variable is wrong and why.
package config
