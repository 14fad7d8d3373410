// Package layers has no code of its own: its test keeps the module's
// import rules, the layers of docs/architecture.md. Each top-level folder
// imports only the folders below it, and nothing under internal/ reaches
// cmd, suites, refharness or reports, directly or through another package.
package layers
