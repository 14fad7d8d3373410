#!/bin/sh
# Runs conform's image as a container would, without a container engine:
# unpacks this machine's platform of the OCI image layout into a directory
# and runs what its layers hold. With chroot (root, as in CI) everything
# runs inside that directory as the image's user, with nothing of the host
# but the kernel and the loopback network; without it, the image's
# binaries run from the directory with only its /bin and /usr/local/bin on
# PATH (SMOKE_MODE=directory forces that).
#
#   sh .ci/release/smoke.sh LAYOUT        e.g. sh .ci/release/smoke.sh dist/image
#
# Checks: the configuration (entrypoint conform, user 65532:65532, /work);
# the image's /bin/sh runs `sh -c 'echo ok'`; `conform version` names the
# source's version; and a durability run: `conform serve --data` from the
# image, then `conform run --restart-cmd` whose restart command — run by
# the image's sh — crashes the server, which comes back with the image's
# busybox and conform alone (a supervisor script in the image's sh starts
# it again); CORE-DUR-001 and CORE-DUR-002 must pass.
set -eu
if [ "$#" -ne 1 ]; then
  echo "usage: sh .ci/release/smoke.sh LAYOUT" >&2
  exit 2
fi
cd "$(dirname "$0")/../.."
layout=$(cd "$1" && pwd)
version=$(sh .ci/release/version.sh)
arch=$(go env GOARCH)
tmp=$(mktemp -d)
root=$tmp/root
cleanup() {
  if [ -d "$root/work" ]; then
    touch "$root/work/stop"
    for p in supervise serve; do
      if [ -s "$root/work/$p.pid" ]; then
        kill "$(cat "$root/work/$p.pid")" 2>/dev/null || true
      fi
    done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "smoke: $*" >&2
  exit 1
}

go run -C .ci/image . unpack --layout "$layout" --platform "linux/$arch" --out "$root" >"$tmp/config"
echo "== the image's configuration (linux/$arch)"
cat "$tmp/config"
for want in entrypoint=/usr/local/bin/conform user=65532:65532 workdir=/work env=PATH=/usr/local/bin:/bin; do
  grep -qx "$want" "$tmp/config" || fail "the configuration lacks $want"
done
[ -L "$root/bin/sh" ] && [ -x "$root/bin/busybox" ] && [ -x "$root/usr/local/bin/conform" ] || fail "no /bin/sh, /bin/busybox or /usr/local/bin/conform in the layers"

# as_image CMD...: CMD run as the container would run it.
# In a chroot, the devices a container runtime provides (a shell's
# background job reads /dev/null).
if [ "${SMOKE_MODE:-}" != directory ] && [ "$(id -u)" = 0 ] && mkdir "$root/dev" && mknod -m 666 "$root/dev/null" c 1 3 2>/dev/null &&
  mknod -m 666 "$root/dev/zero" c 1 5 && mknod -m 666 "$root/dev/urandom" c 1 9 &&
  chroot "$root" /bin/sh -c true 2>/dev/null; then
  mode=chroot
  W=/work
  chroot=$(command -v chroot)
  as_image() {
    env -i PATH=/usr/local/bin:/bin HOME=/work SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
      CONFORM_API_KEY=smoke-key CONFORM_SERVE_API_KEY=smoke-key W=$W \
      "$chroot" --userspec=65532:65532 "$root" "$@"
  }
else
  mode=directory
  W=$root/work
  as_image() {
    cmd=$1
    shift
    case $cmd in /*) cmd=$root$cmd ;; esac
    env -i PATH="$root/usr/local/bin:$root/bin" HOME="$W" CONFORM_API_KEY=smoke-key CONFORM_SERVE_API_KEY=smoke-key W=$W "$cmd" "$@"
  }
fi
echo "== running the image's binaries ($mode)"

out=$(as_image /bin/sh -c 'echo ok')
[ "$out" = ok ] || fail "the image's sh -c 'echo ok' printed '$out'"
echo "sh -c 'echo ok': $out"

out=$(as_image /usr/local/bin/conform version)
echo "conform version: $out"
case $out in
  "conform $version ("*) ;;
  *) fail "conform version does not name $version" ;;
esac

# A supervisor, in the image's sh, keeps `conform serve` running on one
# port and data directory and reaps it when it dies (as a process manager
# would); the restart command, as a user would write it, crashes the server
# and returns once it is gone. Both run with the image's busybox and
# conform only.
cat >"$root/work/supervise.sh" <<'SCRIPT'
echo $$ >"$W/supervise.pid"
addr=127.0.0.1:0
while [ ! -e "$W/stop" ]; do
  conform serve --addr "$addr" --data "$W/data" >>"$W/serve.log" 2>&1 &
  echo $! >"$W/serve.pid"
  wait $!
  if [ -s "$W/serve.addr" ]; then addr=$(cat "$W/serve.addr"); fi
done
SCRIPT
cat >"$root/work/restart.sh" <<'SCRIPT'
pid=$(cat "$W/serve.pid")
kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
SCRIPT
as_image /bin/sh -c 'sh "$W/supervise.sh" </dev/null >/dev/null 2>&1 &'
url=
i=0
while [ $i -lt 300 ]; do
  url=$(sed -n 's/^conform serve: listening on //p' "$root/work/serve.log" 2>/dev/null | head -n 1)
  [ -n "$url" ] && break
  sleep 0.1
  i=$((i + 1))
done
if [ -z "$url" ]; then
  cat "$root/work/serve.log" >&2 || true
  fail "conform serve from the image did not start in 30 s"
fi
echo "${url#http://}" >"$root/work/serve.addr"
echo "conform serve from the image: $url"

code=0
as_image /usr/local/bin/conform run --target "$url" --levels core --focus 'across a restart' \
  --restart-cmd 'sh "$W/restart.sh"' --out "$W/report" >"$tmp/run.log" 2>&1 || code=$?
verdicts=$(awk '/"id": "CORE-DUR-00[12]"/ { id = $2 } id != "" && /"verdict":/ { print id, $2; id = "" }' "$root/work/report/conform.json" | tr -d '",')
echo "conform run --restart-cmd (exit $code; a run narrowed by --focus leaves Core partial):"
echo "$verdicts"
if [ "$code" -eq 2 ] || [ "$(echo "$verdicts" | grep -c ' pass$')" -ne 2 ]; then
  cat "$tmp/run.log" "$root/work/serve.log" >&2
  fail "the durability run through the image's shell did not pass CORE-DUR-001 and CORE-DUR-002"
fi
[ "$(grep -c '^conform serve: listening on ' "$root/work/serve.log")" -eq 2 ] || fail "the server was not started again by the restart command"
echo "smoke: the image runs conform, its sh, and a --restart-cmd ($mode)"
