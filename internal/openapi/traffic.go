package openapi

import "github.com/harn-conform/conform/internal/client"

// ValidateTraffic judges one exchange a client observed (client.Observer):
//
//   - the request, unless it is a deliberate probe (Traffic.Probe): a
//     probe's request is malformed on purpose;
//   - the response's status and headers, always;
//   - the response body, when the client read it whole (not a stream's or
//     a WebSocket upgrade's, see Traffic.BodyRead, and not one cut at the
//     client's size cap).
//
// So a probe's answer is still judged, normally as an error envelope. A
// frame's data (Traffic.Component set: the Event of a WebSocket event
// frame) is judged against that component alone (ValidateComponent).
func (d *Doc) ValidateTraffic(t client.Traffic) []Violation {
	if t.Component != "" {
		return d.ValidateComponent(t.Component, t.Label, t.ResponseBody)
	}
	var out []Violation
	if t.Probe == "" {
		out = append(out, d.ValidateRequest(t.Method, t.Path, t.Query, t.RequestHeader, t.RequestBody)...)
	}
	if t.Status != 0 {
		out = append(out, d.validateResponse(t.Method, t.Path, t.Status, t.ResponseHeader, t.ResponseBody, t.BodyRead() && !t.Truncated)...)
	}
	return out
}
