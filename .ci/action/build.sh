#!/bin/sh
# The GitHub Action's build step: builds conform with .ci/build.sh into
# $RUNNER_TEMP/conform-bin and adds that directory to $GITHUB_PATH, so the
# next steps find `conform`.
#
# Environment:
#   GITHUB_ACTION_PATH   the action's own checkout, built by default
#   RUNNER_TEMP, GITHUB_PATH   as set by the runner
#   CONFORM_REF          optional: a tag, branch or commit of conform to build
#                        instead of the action's checkout (fetched from GitHub)
#   CONFORM_REPOSITORY   owner/name of conform on github.com (for CONFORM_REF)
#   CONFORM_ACTION_REF   the ref the action was used at (github.action_ref):
#                        stamped in as the commit when it is one (a pinned
#                        `uses: …@<sha>`); the action's checkout has no .git
#
# The version is the source's (cmd/conform/version.go), never stamped.
set -eu

src=${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set: run as a GitHub Action step}
bindir="${RUNNER_TEMP:?RUNNER_TEMP is not set}/conform-bin"

# is_sha REF: REF is a full commit id.
is_sha() {
	case $1 in
		*[!0-9a-f]*) return 1 ;;
	esac
	[ "${#1}" -eq 40 ]
}

if [ -n "${CONFORM_REF:-}" ]; then
	repo=${CONFORM_REPOSITORY:-harn-conform/conform}
	dir="$RUNNER_TEMP/conform-src"
	rm -rf "$dir"
	git init -q "$dir"
	echo "fetching $CONFORM_REF of https://github.com/$repo"
	git -C "$dir" fetch -q --depth 1 "https://github.com/$repo.git" "$CONFORM_REF"
	git -C "$dir" -c advice.detachedHead=false checkout -q FETCH_HEAD
	commit=$(git -C "$dir" rev-parse HEAD)
	# An older conform may predate .ci/build.sh: then this action's copy
	# builds it (CONFORM_SRC names the module to build).
	if [ -f "$dir/.ci/build.sh" ]; then
		COMMIT=$commit sh "$dir/.ci/build.sh" "$bindir/conform"
	else
		CONFORM_SRC=$dir COMMIT=$commit sh "$src/.ci/build.sh" "$bindir/conform"
	fi
else
	commit=
	if is_sha "${CONFORM_ACTION_REF:-}"; then
		commit=$CONFORM_ACTION_REF
	fi
	COMMIT=$commit sh "$src/.ci/build.sh" "$bindir/conform"
fi

if [ -n "${GITHUB_PATH:-}" ]; then
	echo "$bindir" >>"$GITHUB_PATH"
fi
