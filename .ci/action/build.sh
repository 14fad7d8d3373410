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
#   CONFORM_VERSION      the version to stamp in (default: CONFORM_REF, else
#                        CONFORM_ACTION_REF, the ref the action was used at)
set -eu

src=${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set: run as a GitHub Action step}
bindir="${RUNNER_TEMP:?RUNNER_TEMP is not set}/conform-bin"
version=${CONFORM_VERSION:-}

if [ -n "${CONFORM_REF:-}" ]; then
	repo=${CONFORM_REPOSITORY:-harn-conform/conform}
	dir="$RUNNER_TEMP/conform-src"
	rm -rf "$dir"
	git init -q "$dir"
	echo "fetching $CONFORM_REF of https://github.com/$repo"
	git -C "$dir" fetch -q --depth 1 "https://github.com/$repo.git" "$CONFORM_REF"
	git -C "$dir" -c advice.detachedHead=false checkout -q FETCH_HEAD
	[ -n "$version" ] || version=$CONFORM_REF
	# An older conform may predate .ci/build.sh: then this action's copy
	# builds it (CONFORM_SRC names the module to build).
	if [ -f "$dir/.ci/build.sh" ]; then
		VERSION=$version sh "$dir/.ci/build.sh" "$bindir/conform"
	else
		CONFORM_SRC=$dir VERSION=$version sh "$src/.ci/build.sh" "$bindir/conform"
	fi
else
	[ -n "$version" ] || version=${CONFORM_ACTION_REF:-}
	VERSION=$version sh "$src/.ci/build.sh" "$bindir/conform"
fi

"$bindir/conform" version
if [ -n "${GITHUB_PATH:-}" ]; then
	echo "$bindir" >>"$GITHUB_PATH"
fi
