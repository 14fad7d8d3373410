// Package hook lets a Go Harness implement conform's test hooks: the
// conform.scenarios contract (docs/scenarios.md), which drives a task
// through the states a real agent cannot be made to reach on demand, and
// the names and shapes of the resource hooks conform.vault_secrets,
// conform.quotas and conform.connectors.
//
// A Harness that does not implement the hooks is still judged: a run
// without them verifies most observable Core and Receipts MUSTs on the
// target's own tasks and leaves the rest unverified with this package as
// the remedy (docs/scenarios.md, "What a run verifies without the hook").
//
// Adding the scenario contract takes three pieces of glue:
//
//  1. Discovery: Advertise(capabilities) adds "conform.scenarios": "v1" to
//     the capabilities of GET /v1.
//  2. Submit: FromMetadata(task.metadata) parses and validates the
//     scenario; a *Error is a 400 invalid_request whose error.param is
//     Error.Param. Scenario.Only(BuiltinOps...) refuses, the same way, the
//     optional steps the Harness does not implement.
//  3. The worker: Run(ctx, scenario, task) executes the steps against a
//     Task, the small interface through which the runner changes the
//     task's status, appends agent messages, keeps artifacts, waits for
//     task messages and ends the task. Cancel ctx when the task is
//     canceled: Run stops at once and no later step runs.
//
// The reference Harness (refharness, conform serve) uses this package: its
// parser, its runner and, for the steps it implements itself (tool calls
// under a Persona policy, secrets, privacy, replay dependencies), a
// Stepper. See Example for a complete in-memory task in a few dozen lines.
package hook
