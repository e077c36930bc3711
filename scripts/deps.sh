#!/usr/bin/env bash
# Install the Debian 12 packages mcp-sandboxd needs.
#
#   scripts/deps.sh [--engines] [--test] [--gvisor]
#
#   (no option)  build dependencies: compiler, libcurl, json-c, libmicrohttpd, OpenSSL, libyaml,
#                libwslay, cmocka
#   --engines    container engines and image tooling: docker.io, podman, runc,
#                catatonit, tini, debootstrap, curl, ...
#   --test       test, lint and bench tooling: nodejs, npm, valgrind, clang
#                (+ libFuzzer), clang-format, clang-tidy, cppcheck, shellcheck, wrk
#   --gvisor     gVisor's runsc (scripts/engine.sh registers it with dockerd
#                when /usr/bin/runsc exists)
#
# Only packages that are missing are installed; `apt-get update` runs only when
# something must be installed. Silent when everything is present. Needs root.
set -euo pipefail

log() { printf 'deps.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
	sed -n '2,16s/^# \{0,1\}//p' "$0" >&2
}

want_engines=0
want_test=0
want_gvisor=0
while (($#)); do
	case $1 in
	--engines) want_engines=1 ;;
	--test) want_test=1 ;;
	--gvisor) want_gvisor=1 ;;
	-h | --help) usage; exit 0 ;;
	*) usage; die "unknown argument: $1" ;;
	esac
	shift
done

# libc6-dev is listed because gcc only *recommends* it and we install
# without recommends.
pkgs=(gcc make pkg-config libc6-dev libcurl4-openssl-dev libjson-c-dev
	libmicrohttpd-dev nettle-dev libssl-dev libyaml-dev libwslay-dev libcmocka-dev)

if ((want_engines)); then
	# docker.io pulls containerd, runc, iptables and tini (dockerd's
	# docker-init, used for HostConfig.Init). podman's helpers are listed
	# explicitly because they are only recommended: catatonit (its --init),
	# netavark + aardvark-dns (network stack; otherwise apt may pick the
	# legacy CNI plugins), uidmap. debootstrap builds the offline base image;
	# curl is used by engine.sh to talk to the engine sockets.
	pkgs+=(docker.io containerd runc tini iptables
		podman conmon catatonit netavark aardvark-dns uidmap
		debootstrap wget debian-archive-keyring ca-certificates curl)
fi

if ((want_test)); then
	# libclang-rt-14-dev ships libclang_rt.fuzzer*.a, which is all that
	# `clang -fsanitize=fuzzer` needs on bookworm (no libfuzzer-14-dev).
	# iproute2's ss tells the fault tests which process listens on an
	# engine socket. perl and libjson-xs-perl run the generic runner's host
	# tests (tests/runner) as its images run it; python3-ipython and
	# python3-matplotlib run the Python runner's interpreter-mode sessions,
	# figures included, there. openssl makes the Kubernetes API shim's
	# throwaway CA (tests/kube_shim).
	pkgs+=(python3 python3-ipython python3-matplotlib nodejs npm valgrind clang clang-format clang-tidy cppcheck
		shellcheck libclang-rt-14-dev curl wrk iproute2 perl libjson-xs-perl openssl)
fi

((want_gvisor)) && pkgs+=(runsc)

# is_present PKG: true when PKG is installed (or, for node/npm, when the
# commands exist: NodeSource's nodejs bundles npm and conflicts with
# Debian's npm package).
is_present() {
	local status
	case $1 in
	nodejs) command -v node >/dev/null 2>&1 && return 0 ;;
	npm) command -v npm >/dev/null 2>&1 && return 0 ;;
	esac
	status=$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) || return 1
	[[ $status == installed ]]
}

missing=()
declare -A seen=()
for p in "${pkgs[@]}"; do
	[[ -n ${seen[$p]:-} ]] && continue
	seen[$p]=1
	is_present "$p" || missing+=("$p")
done

((${#missing[@]} == 0)) && exit 0

((EUID == 0)) || die "must run as root to install: ${missing[*]}"

export DEBIAN_FRONTEND=noninteractive
log "installing: ${missing[*]}"
apt_opts=(-q -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
apt-get -q update >&2
apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}" >&2
log "done"
