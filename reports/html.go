package reports

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/evidence"
)

// report.html is one self-contained file: inline CSS and a little inline
// JavaScript (the requirement filter), no external resource, so it works
// from file:// and as a CI artifact. Everything a target sent is hostile
// input: html/template escapes it, and the page's Content-Security-Policy
// lets only its own style and script (by hash) run and loads nothing.

const htmlCSS = `
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--alt:#f6f8fa;--pass:#1a7f37;--fail:#cf222e;--warn:#9a6700;--unv:#8250df;--skip:#6e7781;--err:#bc4c00}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;padding:1em 2em 3em;max-width:1400px}
h1{font-size:1.6em;margin:.3em 0}h2{font-size:1.25em;margin:1.6em 0 .5em;border-bottom:1px solid var(--line);padding-bottom:.2em}h3{font-size:1.05em;margin:1em 0 .3em}
table{border-collapse:collapse;width:100%;margin:.4em 0}th,td{border:1px solid var(--line);padding:.3em .5em;text-align:left;vertical-align:top}
th{background:var(--alt)}td.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--alt);border:1px solid var(--line);padding:.5em;white-space:pre-wrap;word-break:break-all;max-height:30em;overflow:auto;margin:.3em 0}
.muted{color:var(--muted)}.pill{display:inline-block;padding:0 .5em;border-radius:1em;font-weight:600;color:#fff;white-space:nowrap}
.s-conformant,.v-pass{background:var(--pass)}.s-nonconformant,.v-fail{background:var(--fail)}.s-partial,.v-unverified{background:var(--unv)}
.v-warn{background:var(--warn)}.v-error,.s-undecided{background:var(--err)}.s-not_claimed,.s-not_requested,.v-skip{background:var(--skip)}
.x{background:#0969da}.st{background:var(--fail)}
.filters{display:flex;gap:.6em;align-items:center;margin:.4em 0;flex-wrap:wrap}.filters input{flex:1;min-width:16em;padding:.3em}.filters select{padding:.3em}
details{border:1px solid var(--line);border-radius:4px;padding:.3em .6em;margin:.4em 0}details>summary{cursor:pointer}
details.f{border-left:4px solid var(--fail)}details.f.e{border-left-color:var(--err)}details.f.x{border-left-color:#0969da;background:none}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1em .8em;margin:.3em 0}dt{color:var(--muted)}dd{margin:0}
.msg{white-space:pre-wrap;word-break:break-word}
.gate{border:1px solid var(--line);border-left:6px solid var(--fail);padding:.5em .8em;margin:.6em 0;font-size:1.05em}
.gate.g-pass{border-left-color:var(--pass)}.gate.g-undecided{border-left-color:var(--err)}
.h{background:#6639ba}.problems li{margin:.2em 0}
`

const htmlJS = `
(function () {
  var q = document.getElementById("q"), v = document.getElementById("verdict"), n = document.getElementById("shown");
  if (!q || !v) { return; }
  var rows = document.querySelectorAll("#reqs tbody tr");
  function apply() {
    var text = q.value.toLowerCase(), want = v.value, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i], verdict = r.getAttribute("data-verdict"), expected = r.getAttribute("data-expected") === "true";
      var ok = !want || (want === "notpass" ? (verdict !== "pass" && verdict !== "skip") : want === "expected" ? expected :
        want === "hook" ? (verdict === "pass" && r.getAttribute("data-hook") === "true") : verdict === want);
      if (ok && text) { ok = r.textContent.toLowerCase().indexOf(text) >= 0; }
      r.hidden = !ok;
      if (ok) { shown++; }
    }
    n.textContent = shown + " of " + rows.length + " shown";
  }
  q.addEventListener("input", apply);
  v.addEventListener("change", apply);
  apply();
})();
`

func cspHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}

// htmlCSP is the page's policy: nothing loads, only the page's own style
// and script run.
var htmlCSP = "default-src 'none'; style-src " + cspHash(htmlCSS) + "; script-src " + cspHash(htmlJS) +
	"; img-src 'none'; base-uri 'none'; form-action 'none'"

const htmlPage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>conform: {{.Verdict}}</title>
<style>` + htmlCSS + `</style>
</head>
<body>
<header>
<h1>conform: {{.Verdict}}</h1>
<p class="muted">Target <code>{{.R.Target}}</code> · protocol <code>{{.R.ProtocolVersion}}</code> · {{.R.Tool.Name}} {{.R.Tool.Version}} ·
seed {{.R.Seed}} · {{printf "%.1f" .Seconds}} s · started {{.R.StartedAt}} · exit code {{.R.ExitCode}}</p>
</header>
<section class="gate g-{{.GateClass}}" id="gate"><strong>Gate:</strong> <span class="msg">{{.GateSummary}}</span></section>
{{with .R.Stopped}}{{if .Hint}}<p>What to do: {{.Hint}}</p>{{end}}{{end}}
{{with .Unchecked}}<p class="muted">{{.}}.</p>{{end}}

<h2 id="problems">Problems</h2>
{{if .Problems}}<ul class="problems">
{{range .Problems}}<li><strong>{{.Title}} ({{len .IDs}}):</strong> {{range $i, $id := .IDs}}{{if $i}}, {{end}}<a href="#{{$.Anchor $id}}">{{$id}}</a>{{end}}{{if .Note}} <span class="muted">— {{.Note}}</span>{{end}}
{{if .Remedies}}<ul>{{range .Remedies}}<li>to verify: {{.Remedy}}: {{join .Requirements ", "}}</li>{{end}}</ul>{{end}}</li>
{{end}}</ul>
{{else}}<p>None: no requirement failed, errored, stayed unverified or is a stale baseline entry.</p>{{end}}

<h2 id="levels">Levels</h2>
<table>
<thead><tr><th>Level</th><th>Status</th><th>Why</th><th>Pass</th><th>Fail</th><th>Warn</th><th>Unverified</th><th>Not applicable</th><th>Error</th>{{if .R.Baseline}}<th>Expected</th>{{end}}<th title="observable MUSTs verified without any conform.* test hook">MUSTs without a hook</th><th title="observable MUSTs verified with some evidence through a conform.* test hook">with a hook</th><th title="observable MUSTs unverified or errored">not verified</th></tr></thead>
<tbody>
{{range .Checked}}<tr><td>{{.Level}}</td><td><span class="pill s-{{.Status}}">{{statusText .Status}}</span></td><td class="msg">{{.Why}}</td>
<td class="n">{{.Counts.Pass}}</td><td class="n">{{.Counts.Fail}}</td><td class="n">{{.Counts.Warn}}</td><td class="n">{{.Counts.Unverified}}</td><td class="n">{{.Counts.Skip}}</td><td class="n">{{.Counts.Error}}</td>{{if $.R.Baseline}}<td class="n">{{.Counts.Expected}}</td>{{end}}
{{with .MUSTs}}<td class="n">{{.VerifiedWithoutHook}} of {{.Observable}}</td><td class="n" title="{{join .Hooks ", "}}">{{.VerifiedWithHook}}</td><td class="n">{{.NotVerified}}</td>{{else}}<td class="n">–</td><td class="n">–</td><td class="n">–</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{if .NotChecked}}<p class="muted">Not checked: {{range $i, $l := .NotChecked}}{{if $i}}; {{end}}{{$l.Level}} ({{levelReason $l}}){{end}}.{{if .NoBadge}} No badge was written for {{join .NoBadge ", "}}.{{end}}</p>{{end}}
{{with .R.Baseline}}<h2 id="baseline">Baseline</h2>
<p>{{.Entries}} entries in <code>{{.File}}</code>.</p>
<dl>
<dt>expected</dt><dd>{{if .Expected}}{{join .Expected ", "}}{{else}}none{{end}}</dd>
<dt>stale</dt><dd>{{if .Stale}}<strong>{{join .Stale ", "}}</strong>: they pass now; remove them from the baseline{{else}}none{{end}}</dd>
<dt>not checked</dt><dd>{{if .NotChecked}}{{join .NotChecked ", "}}{{else}}none{{end}}</dd>
</dl>
{{end}}
{{if .Findings}}<h2 id="failures">Failures and errors</h2>
{{range .Findings}}<details class="f{{if eq .Q.Verdict "error"}} e{{end}}{{if .Q.Expected}} x{{end}}" id="f-{{.Q.ID}}" open>
<summary><strong>{{.Q.ID}}</strong> <span class="pill v-{{.Q.Verdict}}">{{.Q.Verdict}}</span>{{if .Q.Expected}} <span class="pill x">expected by the baseline</span>{{end}}{{if .Q.Hooks}} <span class="pill h" title="seen through {{join .Q.Hooks ", "}}">hook</span>{{end}} {{.Q.Summary}}</summary>
<dl>
<dt>specification</dt><dd><a href="{{.Q.Link}}" rel="noreferrer">{{.Q.Section}}</a> ({{.Q.Keyword}}, {{.Q.Level}})</dd>
<dt>message</dt><dd class="msg">{{.Q.Message}}</dd>
{{if .Q.Remedy}}<dt>to verify</dt><dd class="msg">{{.Q.Remedy}}</dd>{{end}}
{{if .Q.Hooks}}<dt>test hooks</dt><dd>seen through {{join .Q.Hooks ", "}} (docs/interpretations.md#hook-attested)</dd>{{end}}
{{if .Q.BaselineReason}}<dt>baseline reason</dt><dd class="msg">{{.Q.BaselineReason}}</dd>{{end}}
<dt>requirement</dt><dd><a href="#req-{{.Q.ID}}">its row</a></dd>
</dl>
{{range .Evidence}}<h3>{{if .Anchor}}<a href="#{{.Anchor}}">{{.E.Spec}}</a>{{else}}{{.E.Spec}}{{end}} <span class="pill v-{{.E.Verdict}}">{{.E.Verdict}}</span></h3>
<div class="msg">{{.E.Message}}</div>
{{if .E.Remedy}}<p class="muted">to verify: {{.E.Remedy}}</p>{{end}}
{{if .E.Curl}}<p class="muted">reproduce (the failing exchange):</p><pre><code>{{.E.Curl}}</code></pre>{{end}}
{{if .Anchor}}<p><a href="#{{.Anchor}}">wire transcript of this spec</a></p>{{end}}
{{end}}</details>
{{end}}{{end}}

<h2 id="requirements">Requirements</h2>
<div class="filters">
<input id="q" type="search" placeholder="Filter by id, summary or message" aria-label="filter requirements">
<select id="verdict" aria-label="verdict">
<option value="">all verdicts</option><option value="notpass"{{if .Problems}} selected{{end}}>not passed</option><option value="fail">fail</option><option value="error">error</option>
<option value="unverified">unverified</option><option value="warn">warn</option><option value="skip">not applicable</option><option value="pass">pass</option><option value="hook">verified with a hook</option>{{if .R.Baseline}}<option value="expected">expected by the baseline</option>{{end}}
</select>
<span id="shown" class="muted"></span>
</div>
<table id="reqs">
<thead><tr><th>Requirement</th><th>Level</th><th>Keyword</th><th>Verdict</th><th>Summary</th><th>Message</th></tr></thead>
<tbody>
{{range .Rows}}{{template "req" .}}{{end}}</tbody>
</table>
{{if .OtherRows}}<details id="not-checked">
<summary>Requirements of the levels not checked ({{len .OtherRows}})</summary>
<table>
<thead><tr><th>Requirement</th><th>Level</th><th>Keyword</th><th>Verdict</th><th>Summary</th><th>Message</th></tr></thead>
<tbody>
{{range .OtherRows}}{{template "req" .}}{{end}}</tbody>
</table>
</details>{{end}}

{{if .Specs}}<h2 id="transcripts">Transcripts</h2>
<p class="muted">The redacted wire record of every spec that did not pass (bodies cut at 8 KiB).</p>
{{range .Specs}}<details id="{{.Anchor}}">
<summary>{{.S.Name}} <span class="pill v-{{.S.Verdict}}">{{.S.Verdict}}</span></summary>
<dl><dt>location</dt><dd><code>{{.S.Location}}</code></dd><dt>requirements</dt><dd>{{join .S.Requirements ", "}}</dd>
{{if .S.Message}}<dt>message</dt><dd class="msg">{{.S.Message}}</dd>{{end}}
{{if .S.Dropped}}<dt>dropped</dt><dd>{{.S.Dropped}} exchanges past the limit</dd>{{end}}</dl>
{{range .Exchanges}}<details>
<summary><code>{{.X.Method}} {{.X.URL}}</code>{{if .X.Status}} → {{.X.Status}}{{end}}{{if .X.Error}} <span class="pill v-error">error</span>{{end}} <span class="muted">{{.X.Kind}}, {{printf "%.1f" .X.DurationMS}} ms</span></summary>
{{if .X.Curl}}<p class="muted">reproduce:</p><pre><code>{{.X.Curl}}</code></pre>{{end}}
{{if .X.Error}}<p class="muted">error:</p><pre>{{.X.Error}}</pre>{{end}}
<p class="muted">request headers:</p><pre>{{.RequestHeader}}</pre>
{{if .X.RequestBody}}<p class="muted">request body:</p><pre>{{.X.RequestBody}}</pre>{{end}}
{{if .X.Status}}<p class="muted">response headers:</p><pre>{{.ResponseHeader}}</pre>
<p class="muted">response body{{if .X.BodyTruncated}} (truncated){{end}}:</p><pre>{{.X.ResponseBody}}</pre>{{end}}
{{if .X.Frames}}<p class="muted">frames{{if eq .X.Kind "websocket"}} (&gt; sent by conform, &lt; sent by the server){{end}}{{if .X.FramesDropped}} ({{.X.FramesDropped}} more dropped){{end}}:</p><pre>{{join .X.Frames "\n"}}</pre>{{end}}
</details>
{{end}}</details>
{{end}}{{end}}

{{if .Documents}}<h2 id="evidence">Evidence documents</h2>
<p class="muted">Documents the specs attached to their verdicts, whatever the verdict (for Replay, the fidelity oracle's report on each pair of tapes); in full in conform.json.</p>
{{range .Documents}}<details id="{{.Anchor}}">
<summary>{{.A.Name}} <span class="muted">({{.Spec}}{{if .A.Schema}}, <code>{{.A.Schema}}</code>{{end}})</span></summary>
<pre>{{.Text}}</pre>{{if .Cut}}<p class="muted">{{.Cut}} more bytes: the whole document is in conform.json.</p>{{end}}
</details>
{{end}}{{end}}

{{if .R.Notes}}<h2 id="notes">Notes</h2>
<ul>{{range .R.Notes}}<li class="msg">{{.}}</li>{{end}}</ul>{{end}}
{{if .R.SuiteDefects}}<h2 id="defects">Suite defects</h2>
<p class="muted">The suite's own mistakes: no verdict on the target.</p>
<ul>{{range .R.SuiteDefects}}<li class="msg">{{.}}</li>{{end}}</ul>{{end}}
{{if .R.SelfChecks}}<h2 id="self-checks">Self-checks</h2>
<p class="muted">{{len .R.SelfChecks}} checks of the suite's own verifiers on its fixtures ({{.SelfChecksFailed}} failed): no verdict on the target.</p>{{end}}
<script>` + htmlJS + `</script>
</body>
</html>
`

// htmlRow is one requirement's row of the requirement tables.
const htmlRow = `{{define "req"}}<tr id="req-{{.ID}}" data-verdict="{{.Verdict}}" data-expected="{{.Expected}}" data-hook="{{if .Hooks}}true{{end}}"><td><a href="{{.Link}}" rel="noreferrer">{{.ID}}</a>{{if finding .}} <a href="#f-{{.ID}}" class="muted">details</a>{{end}}</td>
<td>{{.Level}}</td><td>{{.Keyword}}</td><td><span class="pill v-{{.Verdict}}">{{.Verdict}}</span>{{if .Expected}} <span class="pill x">expected</span>{{end}}{{if .Stale}} <span class="pill st">stale</span>{{end}}{{if .Hooks}} <span class="pill h" title="some evidence came through {{join .Hooks ", "}}">hook</span>{{end}}</td>
<td>{{.Summary}}</td><td class="msg">{{.Message}}{{if .Remedy}}<br><span class="muted">to verify: {{.Remedy}}</span>{{end}}{{if .BaselineReason}}<br><span class="muted">baseline: {{.BaselineReason}}</span>{{end}}</td></tr>
{{end}}`

var htmlTemplate = template.Must(template.Must(template.New("report.html").Funcs(template.FuncMap{
	"join":        strings.Join,
	"statusText":  statusText,
	"levelReason": levelReason,
	"finding":     isFinding,
}).Parse(htmlPage)).Parse(htmlRow))

type htmlView struct {
	CSP              string
	Verdict          string
	Seconds          float64
	R                *Report
	GateSummary      string
	GateClass        string // pass, fail or undecided
	Unchecked        string // a stopped run's requirements it left unchecked, on one line
	Problems         []htmlProblem
	Checked          []LevelResult // the levels the run checked
	NotChecked       []LevelResult // the others, collapsed to one line
	NoBadge          []string
	Rows, OtherRows  []ReqResult // requirements of the checked levels, and of the others
	Findings         []htmlFinding
	Specs            []htmlSpec
	Documents        []htmlDocument
	SelfChecksFailed int
	findings         map[string]bool
}

// htmlProblem is one line of the page's opening list of problems: a kind,
// its requirement ids (each linked to its details or its row), and for
// unverified MUSTs what to do.
type htmlProblem struct {
	Title    string
	IDs      []string
	Note     string
	Remedies []Remedy
}

// Anchor is where a problem's id links: its failure details when it has
// them, else its requirement row.
func (v htmlView) Anchor(id string) string {
	if v.findings[id] {
		return "f-" + id
	}
	return "req-" + id
}

// htmlDocument is a spec's evidence attachment, indented and cut at
// maxDocumentBytes (a FidelityReport of long tapes can be large; the
// report's JSON keeps the whole).
type htmlDocument struct {
	A      evidence.Attachment
	Spec   string
	Anchor string
	Text   string
	Cut    int // bytes left out
}

const maxDocumentBytes = 64 << 10

func documentOf(a evidence.Attachment, spec, anchor string) htmlDocument {
	d := htmlDocument{A: a, Spec: spec, Anchor: anchor}
	var b bytes.Buffer
	if json.Indent(&b, a.Content, "", "  ") == nil {
		d.Text = b.String()
	} else {
		d.Text = string(a.Content) // not JSON after all: shown as it is, escaped
	}
	if len(d.Text) > maxDocumentBytes {
		cut := maxDocumentBytes
		for cut > 0 && !utf8.RuneStart(d.Text[cut]) {
			cut--
		}
		d.Cut, d.Text = len(d.Text)-cut, d.Text[:cut]
	}
	return d
}

type htmlFinding struct {
	Q        ReqResult
	Evidence []htmlEvidence
}

type htmlEvidence struct {
	E      Evidence
	Anchor string // the spec's transcript, "" when it has none
}

type htmlSpec struct {
	S         SpecResult
	Anchor    string
	Exchanges []htmlExchange
}

type htmlExchange struct {
	X              client.Exchange
	RequestHeader  string
	ResponseHeader string
}

// problems lists what the page opens on: the failed, errored, unverified
// (with what to do) and stale requirements of the levels checked, and the
// expected ones.
func problems(r *Report) []htmlProblem {
	run := map[string]bool{}
	for _, l := range r.Levels {
		run[string(l.Level)] = l.Run
	}
	var failed, errored, unverified, stale, expected []string
	for _, q := range r.Requirements {
		if !run[q.Level] {
			continue
		}
		switch {
		case q.Stale:
			stale = append(stale, q.ID)
		case q.Expected:
			expected = append(expected, q.ID)
		case q.Verdict == Fail:
			failed = append(failed, q.ID)
		case q.Verdict == Error && byStop(r, q):
			// One line under the gate says the run stopped before them.
		case q.Verdict == Error:
			errored = append(errored, q.ID)
		case q.Verdict == Unverified && mandatory(q):
			unverified = append(unverified, q.ID)
		}
	}
	var out []htmlProblem
	if len(failed) > 0 {
		out = append(out, htmlProblem{Title: "Failed", IDs: failed})
	}
	if len(errored) > 0 {
		out = append(out, htmlProblem{Title: "Errors", IDs: errored, Note: "the suite or the network, not the target"})
	}
	if len(unverified) > 0 {
		p := htmlProblem{Title: "Unverified MUSTs", IDs: unverified}
		switch {
		case gated(r, GateUnverified):
			p.Note = "they fail the gate (--fail-on unverified)"
		case r.Gate != nil && r.Gate.FailOn == config.FailOnFailures:
			p.Note = "listed; the gate fails on failures only (--fail-on failures)"
		}
		for _, l := range r.Levels {
			p.Remedies = append(p.Remedies, l.ToVerify...)
		}
		out = append(out, p)
	}
	if len(stale) > 0 {
		out = append(out, htmlProblem{Title: "Stale baseline entries", IDs: stale, Note: "they pass now: remove them from " + baselineFile(r)})
	}
	if len(expected) > 0 {
		out = append(out, htmlProblem{Title: "Expected by the baseline", IDs: expected, Note: "known failures: they do not fail the gate"})
	}
	return out
}

// isFinding says whether a requirement gets a detailed entry: it failed,
// errored, or is a stale baseline entry.
func isFinding(q ReqResult) bool { return q.Verdict == Fail || q.Verdict == Error || q.Stale }

func headerText(h map[string][]string) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range h[k] {
			fmt.Fprintf(&b, "%s: %s\n", http.CanonicalHeaderKey(k), v)
		}
	}
	return b.String()
}

// WriteHTML writes report.html: the verdict and the gate's decision
// first, then the problems (failed, errored, unverified, stale), each id
// linked to its details or row, the levels checked (the others on one
// line), the failures' details with the failing exchange, and the
// requirements (those of levels not checked collapsed).
func WriteHTML(w io.Writer, r *Report) error {
	v := htmlView{CSP: htmlCSP, Verdict: verdictLine(r), Seconds: r.DurationMS / 1000, R: r, findings: map[string]bool{}}
	v.GateClass = "fail"
	if g := r.Gate; g != nil {
		v.GateSummary = g.Summary
		switch {
		case g.Passed:
			v.GateClass = "pass"
		case r.ExitCode == ExitEngine:
			v.GateClass = "undecided"
		}
	} else {
		v.GateSummary = fmt.Sprintf("exit %d", r.ExitCode)
	}
	run := map[string]bool{}
	for _, l := range r.Levels {
		run[string(l.Level)] = l.Run
		if l.Run {
			v.Checked = append(v.Checked, l)
		} else {
			v.NotChecked = append(v.NotChecked, l)
		}
	}
	v.NoBadge = Unjudged(r)
	for _, q := range r.Requirements {
		if run[q.Level] {
			v.Rows = append(v.Rows, q)
		} else {
			v.OtherRows = append(v.OtherRows, q)
		}
		if isFinding(q) {
			v.findings[q.ID] = true
		}
	}
	v.Problems = problems(r)
	_, _, v.Unchecked = stopLines(r)
	anchors := map[string]string{}
	for i, s := range r.Specs {
		if len(s.Transcript) == 0 {
			continue
		}
		hs := htmlSpec{S: s, Anchor: fmt.Sprintf("spec-%d", i+1)}
		for _, x := range s.Transcript {
			hs.Exchanges = append(hs.Exchanges, htmlExchange{X: x, RequestHeader: headerText(x.RequestHeader), ResponseHeader: headerText(x.ResponseHeader)})
		}
		anchors[s.Name] = hs.Anchor
		v.Specs = append(v.Specs, hs)
	}
	for _, s := range r.Specs {
		for _, a := range s.Evidence {
			v.Documents = append(v.Documents, documentOf(a, s.Name, fmt.Sprintf("doc-%d", len(v.Documents)+1)))
		}
	}
	for _, q := range r.Requirements {
		if !isFinding(q) {
			continue
		}
		f := htmlFinding{Q: q}
		for _, e := range q.Evidence {
			f.Evidence = append(f.Evidence, htmlEvidence{E: e, Anchor: anchors[e.Spec]})
		}
		v.Findings = append(v.Findings, f)
	}
	for _, s := range r.SelfChecks {
		if s.Verdict == Fail || s.Verdict == Error {
			v.SelfChecksFailed++
		}
	}
	return htmlTemplate.Execute(w, v)
}
