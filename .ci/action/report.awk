# report.awk reads conform.json as conform writes it (Go's encoding/json, two
# spaces of indent per level: top-level keys at 2, the fields of a level or a
# requirement at 6) with nothing but POSIX awk, so the CI scripts need no JSON
# tool on the runner.
#
#   awk -v mode=outputs     -f report.awk conform.json   # KEY=VALUE lines for $GITHUB_OUTPUT
#   awk -v mode=annotations -f report.awk conform.json   # ::error / ::warning workflow commands
#
# Whatever fails the gate is an error: a failed MUST, a stale baseline entry
# (listed, but it passes now), an error, and under the default gate
# (--fail-on unverified) an unverified observable MUST, with what to do
# (its "gate" member says so). A failure a baseline expects is a warning,
# and so is an unverified MUST the gate lets through (--fail-on failures:
# listed in the report's gate.unverified). A stopped
# run (preflight, or the target stopped answering) gets one error naming why
# instead of one per requirement it left undecided. At most `max` (default
# 10) annotations of each kind are printed — GitHub shows no more per step —
# the last one naming the rest.

# unjson decodes the body of a JSON string as encoding/json escapes it.
function unjson(s,    out, i, n, c, h) {
	if (index(s, "\\") == 0) return s
	out = ""
	n = length(s)
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		if (c != "\\") {
			out = out c
			continue
		}
		i++
		c = substr(s, i, 1)
		if (c == "n") out = out "\n"
		else if (c == "r") out = out "\r"
		else if (c == "t") out = out "\t"
		else if (c == "b" || c == "f") out = out " "
		else if (c == "u") {
			h = tolower(substr(s, i + 1, 4))
			i += 4
			if (h == "003c") out = out "<"
			else if (h == "003e") out = out ">"
			else if (h == "0026") out = out "&"
			else if (h == "2028" || h == "2029") out = out "\n"
			else if (h == "fffd") out = out "\357\277\275"
			else out = out " "
		} else out = out c
	}
	return out
}

# strval is the decoded string value of a `"key": "value",` line.
function strval(line) {
	sub(/^[^"]*"[^"]*": "/, "", line)
	sub(/",?$/, "", line)
	return unjson(line)
}

# gsubst replaces every occurrence of the literal string from in s.
function gsubst(s, from, to,    out, i) {
	out = ""
	while ((i = index(s, from)) > 0) {
		out = out substr(s, 1, i - 1) to
		s = substr(s, i + length(from))
	}
	return out s
}

# Workflow command escaping: data, and property values (which also may
# not hold ':' or ',').
function escdata(s) {
	s = gsubst(s, "%", "%25")
	s = gsubst(s, "\r", "%0D")
	return gsubst(s, "\n", "%0A")
}
function escprop(s) {
	s = escdata(s)
	s = gsubst(s, ":", "%3A")
	return gsubst(s, ",", "%2C")
}

function add(kind, title, msg) {
	n[kind]++
	if (n[kind] < max) {
		print "::" kind " title=" escprop(title) "::" escdata(msg)
	} else if (n[kind] == max) {
		held[kind] = "::" kind " title=" escprop(title) "::" escdata(msg)
		more[kind] = " " title
	} else {
		more[kind] = more[kind] " " title
	}
}

function flush(kind,    k) {
	if (n[kind] == max) print held[kind]
	else if (n[kind] > max) {
		k = n[kind] - max + 1
		print "::" kind " title=" escprop(k " more") "::" escdata(k " more requirements (see the step summary and conform.json):" more[kind])
	}
}

# requirement records the requirement just read; annotations are printed at
# the end, once the whole report (its "stopped" block comes last) is known.
function requirement(    msg) {
	if (id == "") return
	if (verdict == "fail" && !expected) failed = failed (failed == "" ? "" : ",") id
	if (verdict == "error") errored = errored (errored == "" ? "" : ",") id
	if (verdict == "warn") warned = warned (warned == "" ? "" : ",") id
	if (expected) expect = expect (expect == "" ? "" : ",") id
	if (stale) stales = stales (stales == "" ? "" : ",") id
	if (verdict != "fail" && verdict != "error" && verdict != "warn" && verdict != "unverified" && !stale) return
	msg = message
	if (length(msg) > 2000) msg = substr(msg, 1, 2000) "…"
	if (remedy != "") msg = msg "\nto verify: " remedy
	if (link != "") msg = msg "\n" link
	nreq++
	rid[nreq] = id
	rverdict[nreq] = verdict
	rexpected[nreq] = expected
	rstale[nreq] = stale
	rgate[nreq] = gatewhy
	rtitle[nreq] = id " (" keyword ", " rlevel ")"
	rmsg[nreq] = msg
}

function annotate(    i, msg, pass) {
	# A stopped run: one annotation says why; the requirements it left
	# undecided all repeat that reason, so they get none of their own.
	if (stopstage != "") {
		msg = stopmsg
		if (stophint != "") msg = msg "\nhint: " stophint
		print "::error title=" escprop("conform could not decide (" stopstage ")") "::" escdata(msg)
	}
	# Failures, stale entries and errors first, then the unverified MUSTs
	# the gate fails on, those a failure blocked last: the causes get the
	# ten annotations GitHub shows before their consequences do.
	for (i = 1; i <= nreq; i++) {
		if (rstale[i]) add("error", rtitle[i], "stale baseline entry: it passes now, remove it from the baseline file (the baseline only shrinks)")
		else if (rverdict[i] == "fail" && rexpected[i]) add("warning", rtitle[i], "expected failure, listed in the baseline: " rmsg[i])
		else if (rverdict[i] == "fail") add("error", rtitle[i], rmsg[i])
		else if (rverdict[i] == "error" && stopstage == "") add("error", rtitle[i], "not decided, the run broke (not your server's fault): " rmsg[i])
		else if (rverdict[i] == "warn") add("warning", rtitle[i], rmsg[i])
		else if (rverdict[i] == "unverified" && !(rgate[i] == "unverified") && (rid[i] in listed)) add("warning", rtitle[i], "unverified; the gate lets it through (--fail-on " failon "): " rmsg[i])
	}
	for (pass = 1; pass <= 2; pass++) {
		for (i = 1; i <= nreq; i++) {
			if (rgate[i] != "unverified" || (index(rmsg[i], "not checked: blocked by ") == 1) != (pass == 2)) continue
			add("error", rtitle[i], "unverified, and the gate fails on it (--fail-on unverified): " rmsg[i])
		}
	}
	flush("error")
	flush("warning")
}

BEGIN {
	if (max == "") max = 10
	max += 0
	nlevels = 0
}

/^  "[A-Za-z_]+": / {
	sect = $0
	sub(/^  "/, "", sect)
	sub(/".*/, "", sect)
	next
}

sect == "levels" && /^      "level": "/ {
	lvl = strval($0)
	levels[++nlevels] = lvl
	next
}
sect == "levels" && /^      "status": "/ {
	status[lvl] = strval($0)
	next
}

sect == "stopped" && /^    "stage": "/ { stopstage = strval($0); next }
sect == "stopped" && /^    "message": "/ { stopmsg = strval($0); next }
sect == "stopped" && /^    "hint": "/ { stophint = strval($0); next }

sect == "gate" && /^    "fail_on": "/ { failon = strval($0); next }
sect == "gate" && /^    "summary": "/ { gatesum = strval($0); next }
sect == "gate" && /^    "unverified": \[$/ { inunv = 1; next }
sect == "gate" && inunv && /^    \]/ { inunv = 0; next }
sect == "gate" && inunv && /^      "/ { u = $0; sub(/^ *"/, "", u); sub(/",?$/, "", u); listed[u] = 1; unv = unv (unv == "" ? "" : ",") u; next }

sect == "requirements" && /^    \{/ { id = rlevel = keyword = verdict = message = link = remedy = gatewhy = ""; expected = stale = 0; next }
sect == "requirements" && /^      "remedy": "/ { remedy = strval($0); next }
sect == "requirements" && /^      "gate": "/ { gatewhy = strval($0); next }
sect == "requirements" && /^      "expected": true/ { expected = 1; next }
sect == "requirements" && /^      "stale": true/ { stale = 1; next }
sect == "requirements" && /^      "id": "/ { id = strval($0); next }
sect == "requirements" && /^      "level": "/ { rlevel = strval($0); next }
sect == "requirements" && /^      "keyword": "/ { keyword = strval($0); next }
sect == "requirements" && /^      "link": "/ { link = strval($0); next }
sect == "requirements" && /^      "verdict": "/ { verdict = strval($0); next }
sect == "requirements" && /^      "message": "/ { message = strval($0); next }
sect == "requirements" && /^    \}/ { requirement(); id = ""; next }

END {
	if (mode == "outputs") {
		all = ""
		for (i = 1; i <= nlevels; i++) {
			print levels[i] "=" status[levels[i]]
			all = all (all == "" ? "" : ",") levels[i] "=" status[levels[i]]
		}
		print "levels=" all
		print "failed=" failed
		print "errored=" errored
		print "warned=" warned
		print "expected=" expect
		print "stale=" stales
		print "unverified=" unv
		print "fail-on=" failon
		print "gate=" gatesum
		print "stopped=" stopstage
	} else if (mode == "annotations") {
		annotate()
	}
}
