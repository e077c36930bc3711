#!/usr/bin/env bash
# Build, offline from any container registry, a minimal Debian bookworm root
# filesystem with debootstrap (--variant=minbase), using the Debian mirror the
# host's apt already uses, and cache it as a tarball.
#
#   containers/base/build-base.sh [--force]
#
# Prints the tarball's path on stdout. Reuses the cached tarball unless
# --force is given. scripts/images.sh imports it as mcp-sandboxd-base:bookworm
# (`docker import` / `podman import`); the Dockerfiles build on top of it with
# --build-arg BASE=mcp-sandboxd-base:bookworm.
#
# Environment:
#   MCPSANDBOXD_CACHE_DIR        cache directory (default /var/cache/mcp-sandboxd)
#   MCPSANDBOXD_MIRROR           Debian mirror (default: from /etc/apt, else
#                                http://deb.debian.org/debian)
#   MCPSANDBOXD_SECURITY_MIRROR  security mirror (default: from /etc/apt, else
#                                http://deb.debian.org/debian-security)
#
# Needs root and debootstrap (scripts/deps.sh --engines).
set -euo pipefail

readonly SUITE=bookworm
readonly KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
CACHE_DIR=${MCPSANDBOXD_CACHE_DIR:-/var/cache/mcp-sandboxd}
TARBALL=$CACHE_DIR/base-$SUITE-minbase.tar.gz

log() { printf 'build-base.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

force=0
while (($#)); do
	case $1 in
	--force) force=1 ;;
	-h | --help)
		sed -n '2,21s/^# \{0,1\}//p' "$0" >&2
		exit 0
		;;
	*) die "unknown argument: $1" ;;
	esac
	shift
done

if ((!force)) && [[ -s $TARBALL ]]; then
	printf '%s\n' "$TARBALL"
	exit 0
fi

((EUID == 0)) || die "must run as root (debootstrap)"
command -v debootstrap >/dev/null 2>&1 ||
	[[ -x /usr/sbin/debootstrap ]] ||
	die "debootstrap not found; run scripts/deps.sh --engines"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# apt_uri SUITE: first URI the host's apt sources use for SUITE (main
# archive), in deb822 (*.sources) or one-line (*.list) format.
apt_uri() {
	local suite=$1 f
	local -a files=()
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources; do
		[[ -r $f ]] && files+=("$f")
	done
	((${#files[@]})) || return 0
	awk -v suite="$suite" '
		function flush() {
			if (types ~ /(^| )deb( |$)/ && enabled !~ /^(no|false)$/ &&
			    (" " suites " ") ~ (" " suite " ") && uris != "" && !found) {
				split(uris, u, " "); print u[1]; found = 1
			}
			types = ""; uris = ""; suites = ""; enabled = ""
		}
		FNR == 1 { flush(); deb822 = (FILENAME ~ /\.sources$/) }
		deb822 && /^[ \t]*$/ { flush(); next }
		deb822 && /^#/ { next }
		deb822 {
			key = tolower($1); sub(/:$/, "", key)
			val = $0; sub(/^[^:]*:[ \t]*/, "", val)
			if (key == "types") types = val
			else if (key == "uris") uris = val
			else if (key == "suites") suites = val
			else if (key == "enabled") enabled = tolower(val)
			next
		}
		!deb822 && $1 == "deb" && !found {
			i = 2
			if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
			if ($(i + 1) == suite) { print $i; found = 1 }
		}
		END { flush() }
	' "${files[@]}"
}

mirror=${MCPSANDBOXD_MIRROR:-$(apt_uri "$SUITE")}
mirror=${mirror:-http://deb.debian.org/debian}
security=${MCPSANDBOXD_SECURITY_MIRROR:-$(apt_uri "$SUITE-security")}
security=${security:-http://deb.debian.org/debian-security}

mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.base.lock"
flock 9
# Another run may have finished the tarball while we waited for the lock.
if ((!force)) && [[ -s $TARBALL ]]; then
	printf '%s\n' "$TARBALL"
	exit 0
fi

work=$(mktemp -d "$CACHE_DIR/base.XXXXXX")
rootfs=$work/rootfs

# Unmount anything debootstrap may have left mounted under $work (it mounts
# /proc and /sys in the target), then remove it without crossing devices.
cleanup() {
	local m
	if [[ -d $work ]]; then
		while read -r m; do
			umount -l "$m" 2>/dev/null || true
		done < <(awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r)
		rm -rf --one-file-system "$work"
	fi
}
trap cleanup EXIT

log "debootstrap --variant=minbase $SUITE from $mirror (security: $security)"
start=$SECONDS
keyring=()
[[ -r $KEYRING ]] && keyring=(--keyring="$KEYRING")
if ! debootstrap --variant=minbase "${keyring[@]}" "$SUITE" "$rootfs" "$mirror" \
	>"$work/debootstrap.log" 2>&1; then
	tail -n 30 "$work/debootstrap.log" >&2
	[[ -r $rootfs/debootstrap/debootstrap.log ]] &&
		tail -n 30 "$rootfs/debootstrap/debootstrap.log" >&2
	die "debootstrap failed"
fi

# --- make it look like debian:bookworm-slim ---------------------------------

rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

# Keep documentation, man pages and translations out of the image.
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
EOF
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
printf 'Acquire::Languages "none";\n' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
printf 'Acquire::GzipIndexes "true";\n' >"$rootfs/etc/apt/apt.conf.d/docker-gzip-indexes"
# No service may start during image builds.
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 755 "$rootfs/usr/sbin/policy-rc.d"

find "$rootfs/usr/share/doc" -mindepth 1 -not -type d -not -name copyright -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$rootfs/usr/share/man/"* "$rootfs/usr/share/info/"* \
	"$rootfs/usr/share/locale/"* "$rootfs/usr/share/groff/"* \
	"$rootfs/usr/share/lintian/"*
rm -rf "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin \
	"$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/log/"*.log \
	"$rootfs/var/log/apt/"* "$rootfs/debootstrap"
# The engine provides these at run time.
: >"$rootfs/etc/resolv.conf"
: >"$rootfs/etc/hostname"

# The engine mounts /dev, /proc and /sys itself: ship them empty.
tar --numeric-owner -C "$rootfs" \
	--exclude=./dev/* --exclude=./proc/* --exclude=./sys/* \
	-cf - . | gzip -1 >"$work/base.tar.gz"
mv "$work/base.tar.gz" "$TARBALL"
log "wrote $TARBALL ($(du -h "$TARBALL" | cut -f1), $((SECONDS - start)) s)"
printf '%s\n' "$TARBALL"
