#!/usr/bin/env bash
# Build the mcp-sandboxd sandbox images into the engine the daemon would use,
# offline from any container registry.
#
#   scripts/images.sh [--engine unix:///path] [--force] [-v] [LANGUAGE ...]
#   scripts/images.sh [--engine unix:///path] [--force] [-v] --daemon
#
# The images are those of the languages the daemon would offer: its
# language table (src/sandbox/languages/builtin.json, changed by
# MCPSANDBOXD_LANGUAGES_FILE) and its enabled subset (MCPSANDBOXD_LANGUAGES,
# or the LANGUAGE arguments: names or aliases), as
# `build/mcp-sandboxd --list-images` prints them (built first when
# missing). An image is built from containers/<language>/, else from
# containers/<X>/ when it is named mcp-sandboxd-<X>:TAG (TypeScript shares
# the node image); languages sharing an image build it once. An image with
# no folder here is the operator's own: it must already exist.
#
# The engine socket comes from `scripts/engine.sh discover` (so --engine,
# MCPSANDBOXD_ENGINE, DOCKER_HOST and CONTAINER_HOST all apply); whether it is
# Docker or Podman from `scripts/engine.sh kind`. The engine must be running
# (scripts/engine.sh start docker|podman).
#
# Each image is labelled io.mcp-sandboxd.hash=<hash of containers/<lang>/>; an
# image whose label matches is left alone (--force rebuilds, without the
# layer cache, e.g. to pick up Debian updates). Builds run
# FROM mcp-sandboxd-base:bookworm, imported from the debootstrap tarball made
# by containers/base/build-base.sh, with host networking so apt reaches the
# Debian mirror. When the target is Podman and the Docker engine on
# /var/run/docker.sock already has an image with the same hash, it is copied
# with `docker save | podman load` instead of being rebuilt.
#
# The package installers' images (the package cache's) follow the language
# image they extend: mcp-sandboxd-python-pip from containers/python-pip/
# after mcp-sandboxd-python, mcp-sandboxd-node-npm from containers/node-npm/
# after mcp-sandboxd-node (INSTALLERS below), each FROM that image as just
# built; their hash label covers their folder and
# the id of the image they extend, so a rebuilt language image rebuilds them.
#
# --daemon builds the daemon's own image instead, mcp-sandboxd:latest
# (containers/daemon/Dockerfile, for deploy/kubernetes), from a copy of
# what it compiles (Makefile, src/, scripts/embed.sh); its hash label
# covers that copy.
#
# Prints one summary line per image on stdout; progress on stderr; build
# output goes to a log file (-v: to stderr).
#
# Environment:
#   MCPSANDBOXD_PYTHON_IMAGE, MCPSANDBOXD_JS_IMAGE, MCPSANDBOXD_LANGUAGES,
#   MCPSANDBOXD_LANGUAGES_FILE  as the daemon reads them
#   MCPSANDBOXD_CACHE_DIR     base tarball and build logs (default /var/cache/mcp-sandboxd)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT
readonly ENGINE_SH=$ROOT/scripts/engine.sh
readonly BUILD_BASE=$ROOT/containers/base/build-base.sh
readonly BASE_IMAGE=mcp-sandboxd-base:bookworm
readonly HASH_LABEL=io.mcp-sandboxd.hash
readonly DOCKER_SOCK=/var/run/docker.sock
readonly PODMAN_SOCK=/run/podman/podman.sock
readonly DOCKER_CLI=/usr/bin/docker
CACHE_DIR=${MCPSANDBOXD_CACHE_DIR:-/var/cache/mcp-sandboxd}

log() { printf 'images.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
	sed -n '2,50s/^# \{0,1\}//p' "$0" >&2
}

engine_args=()
force=0
verbose=0
daemon=0
langs=()
while (($#)); do
	case $1 in
	--engine)
		(($# >= 2)) || die "--engine needs a value (unix:///path)"
		engine_args=(--engine "$2")
		shift
		;;
	--engine=*) engine_args=("$1") ;;
	--force) force=1 ;;
	--daemon) daemon=1 ;;
	-v | --verbose) verbose=1 ;;
	[a-z]*) langs+=("$1") ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage
		die "unknown argument: $1"
		;;
	esac
	shift
done

((daemon && ${#langs[@]} == 0)) || ((!daemon)) || die "--daemon takes no LANGUAGE"
bin=$ROOT/build/mcp-sandboxd
[[ -x $bin ]] || make -s -C "$ROOT" all >&2 || die "cannot build $bin (make all)"
list_args=(--list-images)
if ((${#langs[@]})); then
	list_args+=(--languages "$(IFS=,; printf '%s' "${langs[*]}")")
fi
# "NAME IMAGE" per language; the config file is read only with --config.
mapfile -t wanted < <("$bin" "${list_args[@]}") ||
	die "$bin --list-images failed"
((${#wanted[@]})) || die "no language to build an image for"

sock=$("$ENGINE_SH" discover "${engine_args[@]}")
"$ENGINE_SH" ping "$sock" ||
	die "no engine answers on unix://$sock (start one: scripts/engine.sh start docker|podman)"
kind=$("$ENGINE_SH" kind "$sock")

# eng ARGS...: the CLI of the target engine.
case $kind in
docker)
	[[ -x $DOCKER_CLI ]] || die "$DOCKER_CLI (Debian's docker.io client) not found"
	eng() { DOCKER_BUILDKIT=0 "$DOCKER_CLI" -H "unix://$sock" "$@"; }
	;;
podman)
	command -v podman >/dev/null 2>&1 || die "podman CLI not found"
	CONTAINERS_CONF=$("$ENGINE_SH" podman-conf)
	export CONTAINERS_CONF
	if [[ $sock -ef $PODMAN_SOCK ]]; then
		# The root API service shares the local CLI's storage.
		eng() { podman "$@"; }
	else
		eng() { podman --remote --url "unix://$sock" "$@"; }
	fi
	;;
esac

# Docker on the default socket, as a source for `docker save` when the
# target is Podman.
docker_src() { DOCKER_BUILDKIT=0 "$DOCKER_CLI" -H "unix://$DOCKER_SOCK" "$@"; }

log_dir=$CACHE_DIR/logs
mkdir -p "$log_dir" 2>/dev/null || log_dir=${TMPDIR:-/tmp}

# dir_hash DIR: hash of the names and contents of the files under DIR.
dir_hash() {
	(
		cd "$1"
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
	) | sha256sum | cut -c1-16
}

# label_of CLI IMAGE: the image's hash label, empty when absent.
label_of() {
	local cli=$1 img=$2 v
	v=$("$cli" image inspect --format "{{ index .Config.Labels \"$HASH_LABEL\" }}" \
		"$img" 2>/dev/null) || return 0
	[[ $v == '<no value>' ]] || printf '%s\n' "$v"
}

image_id() {
	eng image inspect --format '{{ .Id }}' "$1" 2>/dev/null || true
}

# run_logged LOGFILE CMD...: run CMD with its output in LOGFILE (or on
# stderr with -v); on failure show the end of the log.
run_logged() {
	local logf=$1
	shift
	if ((verbose)); then
		"$@" >&2
		return
	fi
	if ! "$@" >"$logf" 2>&1; then
		tail -n 40 "$logf" >&2
		log "failed: $* (full log: $logf)"
		return 1
	fi
}

base_ready=0
ensure_base() {
	((base_ready)) && return 0
	if ! eng image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
		local t0=$SECONDS tarball
		tarball=$("$BUILD_BASE")
		log "importing $tarball as $BASE_IMAGE into $kind"
		run_logged "$log_dir/import-base-$kind.log" \
			eng import --change 'CMD ["/bin/bash"]' "$tarball" "$BASE_IMAGE"
		log "base image ready ($((SECONDS - t0)) s)"
	fi
	base_ready=1
}

# remove_old ID NAME: drop the image NAME used to point to, now untagged.
remove_old() {
	local old=$1 name=$2 new
	[[ -n $old ]] || return 0
	new=$(image_id "$name")
	[[ -n $new && $new != "$old" ]] || return 0
	eng rmi "$old" >/dev/null 2>&1 || true
}

# ensure_image LANG NAME [PARENT]: PARENT, an image built here, is the one
# the Dockerfile's BASE names (else the debootstrapped base).
ensure_image() {
	local lang=$1 name=$2 parent=${3:-} dir=$ROOT/containers/$1 hash have old t0 how base
	[[ -f $dir/Dockerfile ]] || die "missing $dir/Dockerfile"
	hash=$(dir_hash "$dir")
	if [[ -n $parent ]]; then
		base=$(image_id "$parent")
		[[ -n $base ]] || die "$name: the image it extends, $parent, is not in $kind"
		hash=$(printf '%s %s\n' "$hash" "$base" | sha256sum | cut -c1-16)
	fi
	have=$(label_of eng "$name")
	if ((!force)) && [[ $have == "$hash" ]]; then
		printf '%s: up to date (%s %s, hash %s)\n' "$name" "$kind" "unix://$sock" "$hash"
		return 0
	fi
	old=$(image_id "$name")
	t0=$SECONDS
	if ((!force)) && [[ $kind == podman ]] && ! [[ $sock -ef $DOCKER_SOCK ]] &&
		"$ENGINE_SH" ping "$DOCKER_SOCK" &&
		[[ $(label_of docker_src "$name") == "$hash" ]]; then
		log "$name: copying from docker (unix://$DOCKER_SOCK) to podman"
		docker_src save "$name" | run_logged "$log_dir/load-$lang-$kind.log" eng load
		how="loaded from docker"
	else
		[[ -n $parent ]] || ensure_base
		t0=$SECONDS
		log "$name: building containers/$lang (log: $log_dir/build-$lang-$kind.log)"
		local build_opts=(--network host --build-arg "BASE=${parent:-$BASE_IMAGE}"
			--label "$HASH_LABEL=$hash" -t "$name")
		((force)) && build_opts+=(--no-cache)
		run_logged "$log_dir/build-$lang-$kind.log" \
			eng build "${build_opts[@]}" "$dir"
		how="built"
	fi
	have=$(label_of eng "$name")
	[[ $have == "$hash" ]] ||
		die "$name: after the $how step its $HASH_LABEL label is '$have', expected '$hash'"
	remove_old "$old" "$name"
	printf '%s: %s in %d s (%s %s, hash %s)\n' "$name" "$how" "$((SECONDS - t0))" \
		"$kind" "unix://$sock" "$hash"
}

# dir_for NAME IMAGE: the folder that builds it, or nothing.
dir_for() {
	local name=$1 image=$2 x
	if [[ -f $ROOT/containers/$name/Dockerfile ]]; then
		printf '%s\n' "$name"
		return
	fi
	x=${image%%:*}
	x=${x#mcp-sandboxd-}
	if [[ $image == mcp-sandboxd-* && -f $ROOT/containers/$x/Dockerfile ]]; then
		printf '%s\n' "$x"
	fi
}

# ensure_daemon_image: mcp-sandboxd:latest from containers/daemon/, its
# context a copy of the sources it compiles.
ensure_daemon_image() {
	local name=mcp-sandboxd:latest ctx hash have old t0
	ctx=$(mktemp -d "${TMPDIR:-/tmp}/mcpsbx-daemon-image.XXXXXX")
	# shellcheck disable=SC2064 # $ctx is known now
	trap "rm -rf '$ctx'" EXIT
	mkdir -p "$ctx/scripts" "$ctx/containers"
	cp -r "$ROOT/Makefile" "$ROOT/src" "$ctx/"
	cp "$ROOT/scripts/embed.sh" "$ctx/scripts/"
	cp -r "$ROOT/containers/daemon" "$ctx/containers/"
	hash=$(dir_hash "$ctx")
	have=$(label_of eng "$name")
	if ((!force)) && [[ $have == "$hash" ]]; then
		printf '%s: up to date (%s %s, hash %s)\n' "$name" "$kind" "unix://$sock" "$hash"
		return 0
	fi
	old=$(image_id "$name")
	ensure_base
	t0=$SECONDS
	log "$name: building containers/daemon (log: $log_dir/build-daemon-$kind.log)"
	local build_opts=(--network host --build-arg "BASE=$BASE_IMAGE" --label "$HASH_LABEL=$hash"
		-t "$name" -f "$ctx/containers/daemon/Dockerfile")
	((force)) && build_opts+=(--no-cache)
	run_logged "$log_dir/build-daemon-$kind.log" eng build "${build_opts[@]}" "$ctx"
	have=$(label_of eng "$name")
	[[ $have == "$hash" ]] ||
		die "$name: after the build its $HASH_LABEL label is '$have', expected '$hash'"
	remove_old "$old" "$name"
	printf '%s: built in %d s (%s %s, hash %s)\n' "$name" "$((SECONDS - t0))" "$kind" \
		"unix://$sock" "$hash"
}

if ((daemon)); then
	ensure_daemon_image
	exit 0
fi

# The installer image each language image's folder has (see the top).
declare -A INSTALLERS=([python]=python-pip [node]=node-npm)

declare -A done_images=()
installers=()
for line in "${wanted[@]}"; do
	name=${line%% *}
	image=${line#* }
	[[ -z ${done_images[$image]:-} ]] || continue
	done_images[$image]=1
	dir=$(dir_for "$name" "$image")
	if [[ -n $dir ]]; then
		ensure_image "$dir" "$image"
		inst=${INSTALLERS[$dir]:-}
		if [[ -n $inst && $image == "mcp-sandboxd-$dir:"* ]]; then
			installers+=("$inst mcp-sandboxd-$inst:${image#*:} $image")
		fi
	elif [[ -n $(image_id "$image") ]]; then
		printf '%s: present, not built here (language %s; %s %s)\n' "$image" "$name" "$kind" \
			"unix://$sock"
	else
		die "language $name uses image $image, which is not in $kind and has no folder under containers/ to build it from"
	fi
done

# After every language image: each installer FROM the image it extends.
for line in "${installers[@]}"; do
	read -r inst image parent <<<"$line"
	ensure_image "$inst" "$image" "$parent"
done
