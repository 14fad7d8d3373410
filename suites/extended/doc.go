// Package extended holds the Extended conformance level's specs: what the
// spec's "Conformance levels / Extended" adds to Core. It grows by
// requirement area (one file each); the WebSocket frame profile harn-ws.v1
// (docs/websocket.md) is in websocket*.go, its connections and frame
// judging in wsconn.go. Specs name their requirement ids with suite.Req and are judged by
// the same roll-up and OpenAPI traffic oracle as every level.
package extended
