#!/bin/sh
# The GitHub Action's run step: maps the action's inputs (passed by action.yml
# as INPUT_* variables) onto the CONFORM_* variables run.sh and conform read,
# then runs run.sh. An empty input leaves a CONFORM_* variable the workflow
# set itself alone, so `env: CONFORM_API_KEY: ${{ secrets.… }}` on the job
# works as well as the api-key input.
set -eu
if [ -n "${INPUT_TARGET:-}" ]; then export CONFORM_TARGET="$INPUT_TARGET"; fi
if [ -n "${INPUT_API_KEY:-}" ]; then export CONFORM_API_KEY="$INPUT_API_KEY"; fi
if [ -n "${INPUT_LEVELS:-}" ]; then export CONFORM_LEVELS="$INPUT_LEVELS"; fi
if [ -n "${INPUT_WAIT_FOR_TARGET:-}" ]; then export CONFORM_WAIT_FOR_TARGET="$INPUT_WAIT_FOR_TARGET"; fi
if [ -n "${INPUT_BASELINE:-}" ]; then export CONFORM_BASELINE="$INPUT_BASELINE"; fi
if [ -n "${INPUT_FAIL_ON:-}" ]; then export CONFORM_FAIL_ON="$INPUT_FAIL_ON"; fi
if [ -n "${INPUT_OUT:-}" ]; then export CONFORM_OUT="$INPUT_OUT"; fi
if [ -n "${INPUT_EXTRA_ARGS:-}" ]; then export CONFORM_EXTRA_ARGS="$INPUT_EXTRA_ARGS"; fi
unset INPUT_API_KEY
exec sh "$(dirname "$0")/run.sh"
