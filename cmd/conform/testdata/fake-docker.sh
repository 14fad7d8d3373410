#!/bin/sh
# A stand-in for docker where there is none (TestDocsDocker): `build` runs
# the Dockerfile's build step (COMMIT=… sh .ci/build.sh, which
# TestDistDockerfile holds the Dockerfile to) into $FAKE_DOCKER_IMAGES/TAG;
# `run` runs that binary as the container would: in a /work of its own,
# with only the -e variables, the -v mounts under /work, as the calling
# user (--user must say so), on the host's network. Anything else it does
# not know is exit 125, as docker's own errors.
set -eu
images=${FAKE_DOCKER_IMAGES:?}
fail() {
	echo "fake docker: $*" >&2
	exit 125
}
[ $# -gt 0 ] || fail "no command"
cmd=$1
shift
case $cmd in
build)
	tag="" commit="" ctx=""
	while [ $# -gt 0 ]; do
		case $1 in
		-t) tag=$2 && shift 2 ;;
		--build-arg)
			case $2 in
			COMMIT=*) commit=${2#COMMIT=} ;;
			*) fail "build argument $2 (the Dockerfile takes COMMIT)" ;;
			esac
			shift 2
			;;
		-*) fail "build flag $1" ;;
		*) ctx=$1 && shift ;;
		esac
	done
	[ -n "$tag" ] && [ -n "$ctx" ] || fail "build needs -t TAG and a context"
	[ -f "$ctx/Dockerfile" ] || fail "no Dockerfile in $ctx"
	mkdir -p "$images/$tag"
	cd "$ctx"
	COMMIT="$commit" sh .ci/build.sh "$images/$tag/conform"
	;;
run)
	root=$(mktemp -d "$images/work.XXXXXX")
	envs=""
	while [ $# -gt 0 ]; do
		case $1 in
		--rm) shift ;;
		--network) [ "$2" = host ] || fail "--network $2 (this stand-in has the host's only)" && shift 2 ;;
		--user) [ "$2" = "$(id -u):$(id -g)" ] || fail "--user $2 (this stand-in runs as the caller only)" && shift 2 ;;
		-e) envs="$envs $2" && shift 2 ;;
		-v)
			host=${2%%:*} ctr=${2#*:}
			case $ctr in
			/work/*) ln -s "$host" "$root/${ctr#/work/}" ;;
			*) fail "-v $2: this stand-in mounts under /work only" ;;
			esac
			shift 2
			;;
		-*) fail "run flag $1" ;;
		*) break ;;
		esac
	done
	[ $# -gt 0 ] || fail "run needs an image"
	bin=$images/$1/conform
	shift
	[ -x "$bin" ] || fail "no image $1 (docker build -t $1 first)"
	set -- "$bin" "$@"
	for e in $envs; do
		case $e in
		*=*) set -- "$e" "$@" ;;
		*) if v=$(printenv "$e"); then set -- "$e=$v" "$@"; fi ;;
		esac
	done
	cd "$root"
	exec env -i HOME=/work PATH=/usr/bin:/bin "$@"
	;;
*) fail "command $cmd" ;;
esac
