#!/bin/sh
# Runs `conform run` as a CI gate and exits with its exit code: 0 conformant,
# 1 not conformant, 2 the run could not decide (configuration, unreachable
# target, engine error, no API key). The GitHub Action (action.yml) and the
# GitLab template (.ci/gitlab/conform.gitlab-ci.yml) both run it; it needs
# only a POSIX shell and awk, and `conform` on PATH (or CONFORM_BIN).
#
# Settings come from the environment, under the names conform itself reads:
#   CONFORM_TARGET           the Harness base URL
#   CONFORM_API_KEY          the API key (or CONFORM_API_KEY_FILE); never printed
#   CONFORM_LEVELS           claimed (default), all, or a list such as core,receipts
#   CONFORM_WAIT_FOR_TARGET  poll GET /v1 this long before the run, e.g. 60s
#   CONFORM_BASELINE         known-failures file (conform baseline write)
#   CONFORM_FAIL_ON          what fails the gate: unverified (default) or failures
#   CONFORM_OUT              report directory (default conform-report)
#   CONFORM_EXTRA_ARGS       more `conform run` flags, split on white space (no quoting)
# and any other CONFORM_* setting (`conform run -h` lists them).
#
# On GitHub Actions (GITHUB_ACTIONS=true) it also appends summary.md to
# $GITHUB_STEP_SUMMARY, writes step outputs to $GITHUB_OUTPUT (exit-code,
# result, report-dir, one per level such as core=conformant, levels, failed,
# errored, warned, expected, stale, unverified, fail-on, gate, stopped) and
# annotates what fails the gate (::error: failed MUSTs, errors, stale
# baseline entries, unverified MUSTs under the default --fail-on
# unverified) and the rest worth a look (::warning: missed SHOULDs,
# expected failures, unverified MUSTs the gate lets through), reading
# conform.json with awk (report.awk), no jq.
set -u
set -f # CONFORM_EXTRA_ARGS is split on white space, never globbed

here=$(cd "$(dirname "$0")" && pwd)
out=${CONFORM_OUT:-conform-report}
bin=${CONFORM_BIN:-conform}
github=false
[ "${GITHUB_ACTIONS:-}" = true ] && github=true

output() {
	if [ -n "${GITHUB_OUTPUT:-}" ]; then printf '%s\n' "$@" >>"$GITHUB_OUTPUT"; fi
}
summary() {
	if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then printf '%s\n' "$@" >>"$GITHUB_STEP_SUMMARY"; fi
}
# result_of is the result an exit code gives; an exit 0 whose levels are not
# all conformant is "passed" (below, once the report is read).
result_of() {
	case $1 in
		0) echo conformant ;;
		1) echo nonconformant ;;
		*) echo inconclusive ;;
	esac
}
# stop ends a run that never started: exit 2 with the reason everywhere a
# reader will look.
stop() {
	echo "conform: $1" >&2
	if $github; then
		printf '::error title=conform could not run::%s\n' "$(printf '%s' "$1" | awk 'BEGIN { ORS = "" } { gsub(/%/, "%25"); if (NR > 1) print "%0A"; print }')"
	fi
	summary "# conform: could not run (exit 2)" "" "$1"
	output "exit-code=2" "result=inconclusive" "report-dir=$out"
	exit 2
}

if ! command -v "$bin" >/dev/null 2>&1; then
	stop "conform is not on PATH (looked for '$bin'): build it first, e.g. sh .ci/build.sh bin/conform and add bin to PATH, or set CONFORM_BIN."
fi

# A missing key is the commonest way a gate breaks without anyone's code
# being wrong (a pull request from a fork is given no secrets): say so, and
# exit 2, never "not conformant".
if [ -z "${CONFORM_API_KEY:-}" ] && [ -z "${CONFORM_API_KEY_FILE:-}" ] && [ -z "${CONFORM_CONFIG:-}" ]; then
	case " ${CONFORM_EXTRA_ARGS:-} " in
		*" --api-key"* | *" -api-key"* | *" --config"* | *" -config"*) ;;
		*)
			# shellcheck disable=SC2016 # backquotes and ${{ }} are text here
			if $github; then
				why='The api-key input is empty. Pass the key from a secret, e.g. `api-key: ${{ secrets.HARNESS_API_KEY }}`, and create that secret in the repository settings (Settings → Secrets and variables → Actions).'
				case ${GITHUB_EVENT_NAME:-} in
					pull_request)
						why="$why"'
This run is for a pull request: GitHub gives no secrets to runs for pull requests from forks (and only Dependabot secrets to Dependabot'"'"'s), so the key is empty there even when the secret exists. Skip the step for forks only (`if: github.event_name != '"'"'pull_request'"'"' || github.event.pull_request.head.repo.full_name == github.repository`: the gate still runs on push) or check after merge.'
						;;
				esac
			elif [ -n "${GITLAB_CI:-}" ]; then
				why='CONFORM_API_KEY is empty. Add it as a masked CI/CD variable (Settings → CI/CD → Variables). A protected variable reaches only pipelines of protected branches and tags, and merge requests from forks get no variables.'
			else
				why='CONFORM_API_KEY is empty. Set it (or CONFORM_API_KEY_FILE) to the API key of the Harness under test.'
			fi
			stop "no API key. $why"
			;;
	esac
fi

set -- run --out "$out"
if [ -n "${CONFORM_TARGET:-}" ]; then set -- "$@" --target "$CONFORM_TARGET"; fi
if [ -n "${CONFORM_LEVELS:-}" ]; then set -- "$@" --levels "$CONFORM_LEVELS"; fi
if [ -n "${CONFORM_WAIT_FOR_TARGET:-}" ]; then set -- "$@" --wait-for-target "$CONFORM_WAIT_FOR_TARGET"; fi
if [ -n "${CONFORM_BASELINE:-}" ]; then set -- "$@" --baseline "$CONFORM_BASELINE"; fi
# shellcheck disable=SC2086 # split on purpose (globbing is off)
set -- "$@" ${CONFORM_EXTRA_ARGS:-}

# The command line, for the log, with secret-bearing values hidden.
shown="" hide=false
for a in "$@"; do
	if $hide; then
		a="[REDACTED]" hide=false
	else
		case $a in
			--api-key | -api-key | --restart-cmd | -restart-cmd | --redact | -redact) hide=true ;;
			--api-key=* | -api-key=* | --restart-cmd=* | -restart-cmd=* | --redact=* | -redact=*) a="${a%%=*}=[REDACTED]" ;;
		esac
	fi
	shown="$shown $a"
done
echo "+ $bin$shown"
# What this script reads afterwards must come from this run, not a previous one.
rm -f "$out/conform.json" "$out/summary.md" "$out/junit.xml"
"$bin" "$@"
code=$?
result=$(result_of "$code")
echo "conform: exit $code ($result)"

json="$out/conform.json"
dir=$out
if [ -d "$out" ]; then dir=$(cd "$out" && pwd); fi
output "exit-code=$code" "result=$result" "report-dir=$dir"
levels="" stopped="" gate=""
if [ -f "$json" ]; then
	outputs=$(awk -v mode=outputs -f "$here/report.awk" "$json") || outputs=""
	if [ -n "${GITHUB_OUTPUT:-}" ] && [ -n "$outputs" ]; then
		printf '%s\n' "$outputs" >>"$GITHUB_OUTPUT"
	fi
	levels=$(printf '%s\n' "$outputs" | sed -n 's/^levels=//p')
	# The gate passed, but not every level checked is conformant (unverified
	# MUSTs under --fail-on failures, areas left out): say so.
	case "$code,$levels" in
		0,*=partial*)
			result=passed
			output "result=$result"
			;;
	esac
	stopped=$(printf '%s\n' "$outputs" | sed -n 's/^stopped=//p')
	gate=$(printf '%s\n' "$outputs" | sed -n 's/^gate=//p')
fi

if [ -f "$out/summary.md" ]; then
	if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$out/summary.md" >>"$GITHUB_STEP_SUMMARY"; fi
else
	summary "# conform: exit $code ($result)" "" "conform wrote no summary.md into \`$out\`: see this step's log."
fi

if $github; then
	case $code in
		0) ;;
		1) echo "::error title=conform found the target not conformant::${gate:-${levels:-see the step summary}}; what fails the gate is annotated (unverified MUSTs with their remedies), the rest is in the step summary" ;;
		*)
			# A stopped run's report says why, annotated below.
			if [ -z "$stopped" ]; then
				echo "::error title=conform could not decide (exit $code)::${levels:-no report}; the configuration, the target's reachability, the network or the suite broke: see the log and the step summary"
			fi
			;;
	esac
	if [ -f "$json" ]; then
		awk -v mode=annotations -v max=9 -f "$here/report.awk" "$json" || true
	fi
fi
exit "$code"
