#!/usr/bin/env bash
# Find, identify, start and stop the container engine mcp-sandboxd talks to.
#
#   scripts/engine.sh discover [--engine unix:///path]
#       Print the engine socket path the daemon would use, as the daemon
#       itself says (mcp-sandboxd --print-engine): --engine, else
#       $MCPSANDBOXD_ENGINE, else $DOCKER_HOST, else $CONTAINER_HOST, else
#       /var/run/docker.sock if it exists, else /run/podman/podman.sock if
#       it exists, else /var/run/docker.sock.
#   scripts/engine.sh kind SOCKET       print "docker" or "podman" (GET /version)
#   scripts/engine.sh ping SOCKET       exit 0 when SOCKET answers GET /_ping
#   scripts/engine.sh start docker      start dockerd on /var/run/docker.sock
#   scripts/engine.sh start podman      start the Podman API service on
#                                       /run/podman/podman.sock
#   scripts/engine.sh stop docker|podman
#                                       stop an engine this script started
#   scripts/engine.sh pid docker|podman print the pid of the running engine
#                                       process (dockerd, or the Podman API
#                                       service) for fault tests to signal;
#                                       fails unless that process, and no
#                                       other, listens on the engine socket
#   scripts/engine.sh systemd-units docker|podman
#                                       print the active systemd units that
#                                       serve this engine (socket activation
#                                       restarts an engine a test killed)
#   scripts/engine.sh ensure [--engine unix:///path]
#       make sure the discovered engine answers (starts docker or podman
#       when the socket is one of theirs)
#   scripts/engine.sh use [NAME]
#       NAME docker, podman or unix:///path (none: the daemon's discovery):
#       ensure that engine, then print its socket path as discover does
#   scripts/engine.sh podman-conf       write (if needed) and print the
#                                       containers.conf used for Podman
#   scripts/engine.sh podman ARGS...    run the podman CLI with that config
#
# Needs root for start/stop. Progress goes to stderr; silent when nothing
# needs doing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT
readonly DOCKER_SOCK=/var/run/docker.sock
readonly PODMAN_SOCK=/run/podman/podman.sock
readonly STATE_DIR=/run/mcp-sandboxd
readonly CONF_DIR=/etc/mcp-sandboxd
readonly PODMAN_CONF=$CONF_DIR/containers.conf
readonly DOCKERD_LOG=/var/log/mcp-sandboxd-dockerd.log
readonly PODMAN_LOG=/var/log/mcp-sandboxd-podman.log
readonly DOCKER_DAEMON_JSON=/etc/docker/daemon.json
# Copy of the daemon.json this script last wrote: lets it tell its own file
# (safe to regenerate) from one an administrator wrote (left alone).
readonly DOCKER_DAEMON_JSON_OURS=$CONF_DIR/docker-daemon.json
readonly START_TIMEOUT=60

log() { printf 'engine.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
	sed -n '2,35s/^# \{0,1\}//p' "$0" >&2
}

# strip_unix URL: "unix:///p" -> "/p"; "/p" -> "/p"; anything else fails.
strip_unix() {
	case $1 in
	unix://*) printf '%s\n' "${1#unix://}" ;;
	/*) printf '%s\n' "$1" ;;
	*) return 1 ;;
	esac
}

# The daemon's own rules, so the scripts and the daemon always agree (the
# daemon is built first when missing).
cmd_discover() {
	local bin=${MCPSANDBOXD_BIN:-$ROOT/build/mcp-sandboxd}
	if [[ ! -x $bin ]]; then
		log "building $bin to ask it which engine it would use"
		make -C "$ROOT" -s all >&2 || die "could not build the daemon (scripts/deps.sh installs what it needs)"
	fi
	"$bin" --print-engine "$@" || die "the daemon refused its engine settings (see above)"
}

# api SOCKET PATH: GET PATH over the socket, body on stdout.
api() {
	curl -sf --max-time 5 --unix-socket "$1" "http://d$2"
}

# ping SOCKET: true when the engine answers /_ping.
ping_sock() {
	[[ -S $1 ]] || return 1
	[[ $(api "$1" /_ping 2>/dev/null) == OK ]]
}

# listeners SOCKET: the pids of processes holding a listening socket bound
# at SOCKET (one per line; /var/run and /run are the same place). Prints
# nothing when ss(8) is missing.
listeners() {
	local want=$1 alt
	command -v ss >/dev/null || return 0
	case $want in
	/var/run/*) alt=/run/${want#/var/run/} ;;
	/run/*) alt=/var/run/${want#/run/} ;;
	*) alt=$want ;;
	esac
	ss -xlpnH 2>/dev/null | awk -v a="$want" -v b="$alt" '$5 == a || $5 == b' |
		grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -un
}

cmd_ping() {
	(($# == 1)) || die "usage: engine.sh ping SOCKET"
	local sock
	sock=$(strip_unix "$1") || die "not a unix socket: $1"
	ping_sock "$sock"
}

cmd_kind() {
	(($# == 1)) || die "usage: engine.sh kind SOCKET"
	local sock body
	sock=$(strip_unix "$1") || die "not a unix socket: $1"
	body=$(api "$sock" /version) || die "no engine answers GET /version on $sock"
	# Podman's compat /version lists a component named "Podman Engine";
	# Docker's is named "Engine".
	if [[ $body == *'"Name":"Podman Engine"'* ]]; then
		echo podman
	else
		echo docker
	fi
}

# --- process bookkeeping ----------------------------------------------------

# running_pid NAME: print the pid from $STATE_DIR/NAME.pid if that process is
# alive and is still the program we started (matched against its cmdline).
running_pid() {
	local pidfile=$STATE_DIR/$1.pid pid cmdline
	[[ -r $pidfile ]] || return 1
	pid=$(<"$pidfile")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/cmdline ]] || return 1
	cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	case $1 in
	dockerd) [[ $cmdline == *dockerd* ]] || return 1 ;;
	podman) [[ $cmdline == *podman*system*service* ]] || return 1 ;;
	esac
	printf '%s\n' "$pid"
}

# wait_ping SOCKET NAME LOG PID: wait until SOCKET answers, fail if the
# process dies or $START_TIMEOUT passes.
wait_ping() {
	local sock=$1 name=$2 logf=$3 pid=$4 i
	for ((i = 0; i < START_TIMEOUT * 4; i++)); do
		ping_sock "$sock" && return 0
		if ! kill -0 "$pid" 2>/dev/null; then
			log "$name exited before answering on $sock; last lines of $logf:"
			tail -n 20 "$logf" >&2 || true
			die "$name failed to start"
		fi
		sleep 0.25
	done
	log "last lines of $logf:"
	tail -n 20 "$logf" >&2 || true
	die "$name did not answer GET /_ping on $sock within ${START_TIMEOUT}s (pid $pid still running)"
}

# spawn NAME LOG CMD...: start CMD detached (own session, no stdin, output
# appended to LOG) so it outlives this script; record its pid.
spawn() {
	local name=$1 logf=$2
	shift 2
	mkdir -p "$STATE_DIR" "$(dirname "$logf")"
	printf '\n=== %s: %s\n' "$(date -Is)" "$*" >>"$logf"
	# Not a process-group leader here, so setsid execs in place and $! is
	# the engine's own pid.
	# fd 9 (the start lock) must not leak into the long-lived engine.
	# The engine runs from its state directory: Podman's conmon writes an
	# "oom" marker into its working directory when a container is OOM-killed.
	(cd "$STATE_DIR" && exec setsid nohup "$@" </dev/null >>"$logf" 2>&1 9>&-) &
	echo "$!" >"$STATE_DIR/$name.pid"
}

need_root() {
	((EUID == 0)) || die "must run as root"
}

# start_lock NAME: serialise concurrent `start` calls (held until exit).
start_lock() {
	mkdir -p "$STATE_DIR"
	exec 9>"$STATE_DIR/start-$1.lock"
	flock 9
}

# --- docker -----------------------------------------------------------------

# nofile limit for containers: dockerd's default (1048576) is above this
# machine's hard limit and cannot be raised without CAP_SYS_RESOURCE.
nofile_limit() {
	local hard
	hard=$(ulimit -Hn)
	if [[ $hard == unlimited ]] || ((hard > 1048576)); then
		hard=1048576
	fi
	printf '%s\n' "$hard"
}

# nproc limit for Podman containers: Podman lowers its own hard nproc limit
# to kernel.pid_max (32768 here), so anything above fails in runc with
# "error setting rlimit type 6: operation not permitted".
nproc_limit() {
	local hard pid_max
	hard=$(ulimit -Hu)
	pid_max=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)
	if [[ $hard == unlimited ]] || ((hard > pid_max)); then
		hard=$pid_max
	fi
	printf '%s\n' "$hard"
}

docker_daemon_json() {
	local nofile soft
	nofile=$(nofile_limit)
	soft=$((nofile < 1024 ? nofile : 1024))
	printf '{\n'
	printf '  "default-ulimits": {\n'
	printf '    "nofile": { "Name": "nofile", "Soft": %d, "Hard": %d }\n' "$soft" "$nofile"
	if [[ -x /usr/bin/runsc ]]; then
		printf '  },\n'
		printf '  "runtimes": {\n'
		# --oci-seccomp: gVisor applies the container's seccomp profile
		# (the daemon sends a gVisor variant of its own) inside its kernel
		# too, so the program meets the same denials as under runc.
		# --host-uds=open: a sandbox may connect to a host unix socket
		# bound into it (never create one), which is how it reaches the
		# daemon's egress gateway; the daemon checks who connected.
		printf '    "runsc": { "path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--oci-seccomp", "--host-uds=open"] }\n'
	fi
	printf '  }\n'
	printf '}\n'
}

# Write /etc/docker/daemon.json unless an administrator owns it.
write_docker_config() {
	local want
	want=$(docker_daemon_json)
	mkdir -p "$CONF_DIR" "$(dirname "$DOCKER_DAEMON_JSON")"
	if [[ -e $DOCKER_DAEMON_JSON ]]; then
		if [[ $(<"$DOCKER_DAEMON_JSON") == "$want" ]]; then
			return 0
		fi
		if ! [[ -e $DOCKER_DAEMON_JSON_OURS ]] ||
			! cmp -s "$DOCKER_DAEMON_JSON" "$DOCKER_DAEMON_JSON_OURS"; then
			log "warning: $DOCKER_DAEMON_JSON was not written by this script; leaving it as is."
			log "  It should contain: ${want//[$'\n ']/}"
			return 0
		fi
	fi
	printf '%s\n' "$want" >"$DOCKER_DAEMON_JSON"
	cp "$DOCKER_DAEMON_JSON" "$DOCKER_DAEMON_JSON_OURS"
	log "wrote $DOCKER_DAEMON_JSON"
}

# A dockerd killed without a chance to clean up (a session that ended, a
# crash) leaves /var/run/docker.pid behind, and dockerd refuses to start
# while it exists. Remove it when no live dockerd owns it.
remove_stale_docker_pidfile() {
	local pidfile=/var/run/docker.pid pid
	[[ -e $pidfile ]] || return 0
	pid=$(<"$pidfile") || pid=
	if [[ $pid =~ ^[0-9]+$ ]] && [[ -r /proc/$pid/cmdline ]] &&
		tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q dockerd; then
		return 0
	fi
	log "removing stale $pidfile (pid ${pid:-?} is not running)"
	rm -f "$pidfile"
}

# A dockerd of ours started before runsc was installed (or before this
# script's settings changed) takes the rewritten daemon.json on SIGHUP:
# runtimes are among what dockerd reloads. A dockerd this script did not
# start, or a daemon.json it did not write, is left alone.
reload_docker_config() {
	local pid i
	[[ -r $DOCKER_DAEMON_JSON ]] && [[ $(<"$DOCKER_DAEMON_JSON") == "$(docker_daemon_json)" ]] && return 0
	pid=$(running_pid dockerd) || return 0
	need_root
	write_docker_config
	[[ $(<"$DOCKER_DAEMON_JSON") == "$(docker_daemon_json)" ]] || return 0
	log "dockerd (pid $pid) reloads $DOCKER_DAEMON_JSON (SIGHUP)"
	kill -HUP "$pid"
	[[ -x /usr/bin/runsc ]] || return 0
	for ((i = 0; i < 40; i++)); do
		api "$DOCKER_SOCK" /info 2>/dev/null | grep -q '"--host-uds=open"' && return 0
		sleep 0.25
	done
	log "warning: dockerd did not take the runsc runtime; see $DOCKERD_LOG"
}

start_docker() {
	local pid dockerd
	if ping_sock "$DOCKER_SOCK"; then
		reload_docker_config
		return 0
	fi
	need_root
	start_lock docker
	ping_sock "$DOCKER_SOCK" && return 0
	if pid=$(running_pid dockerd); then
		log "dockerd (pid $pid) is starting; waiting for $DOCKER_SOCK"
		wait_ping "$DOCKER_SOCK" dockerd "$DOCKERD_LOG" "$pid"
		return 0
	fi
	dockerd=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH command -v dockerd) ||
		die "dockerd not found; run scripts/deps.sh --engines"
	write_docker_config
	remove_stale_docker_pidfile
	log "starting dockerd (log: $DOCKERD_LOG)"
	# -H unix:// only; no bridge and no iptables: the sandboxes run with
	# NetworkMode "none", image builds with --network host.
	spawn dockerd "$DOCKERD_LOG" env -u DOCKER_HOST -u NOTIFY_SOCKET \
		"$dockerd" --iptables=false --bridge=none \
		--host "unix://$DOCKER_SOCK"
	pid=$(<"$STATE_DIR/dockerd.pid")
	wait_ping "$DOCKER_SOCK" dockerd "$DOCKERD_LOG" "$pid"
	log "dockerd is up (pid $pid, unix://$DOCKER_SOCK)"
}

# --- podman -----------------------------------------------------------------

podman_conf_text() {
	local nofile nproc
	nofile=$(nofile_limit)
	nproc=$(nproc_limit)
	cat <<EOF_CONF
# Written by mcp-sandboxd scripts/engine.sh; used through CONTAINERS_CONF
# (which makes Podman read this file instead of the system containers.conf).
[containers]
default_capabilities = [
  "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "NET_BIND_SERVICE",
  "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
]
default_sysctls = ["net.ipv4.ping_group_range=0 0"]
# Podman's defaults (nofile and nproc 1048576) are above this machine's hard
# limits, which cannot be raised without CAP_SYS_RESOURCE. (A --ulimit given
# for one of them drops these defaults: always pass both.)
default_ulimits = ["nofile=1024:$nofile", "nproc=$nproc:$nproc"]
# No journald on these machines.
log_driver = "k8s-file"
init_path = "/usr/bin/catatonit"

[engine]
# crun fails on the cgroup v1/hybrid layout of these machines.
runtime = "runc"
# No systemd: cgroupfs manager, events to a file.
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF_CONF
}

# Write the containers.conf if it is missing or stale; print its path.
ensure_podman_conf() {
	local want
	want=$(podman_conf_text)
	if ! [[ -r $PODMAN_CONF ]] || [[ $(<"$PODMAN_CONF") != "$want" ]]; then
		need_root
		mkdir -p "$CONF_DIR"
		printf '%s\n' "$want" >"$PODMAN_CONF.tmp"
		mv "$PODMAN_CONF.tmp" "$PODMAN_CONF"
		log "wrote $PODMAN_CONF"
	fi
	printf '%s\n' "$PODMAN_CONF"
}

start_podman() {
	local pid podman
	ping_sock "$PODMAN_SOCK" && return 0
	need_root
	start_lock podman
	ping_sock "$PODMAN_SOCK" && return 0
	if pid=$(running_pid podman); then
		log "podman service (pid $pid) is starting; waiting for $PODMAN_SOCK"
		wait_ping "$PODMAN_SOCK" podman "$PODMAN_LOG" "$pid"
		return 0
	fi
	podman=$(command -v podman) || die "podman not found; run scripts/deps.sh --engines"
	ensure_podman_conf >/dev/null
	mkdir -p "$(dirname "$PODMAN_SOCK")"
	# A socket file left by a dead service would make the new one fail.
	[[ -S $PODMAN_SOCK ]] && rm -f "$PODMAN_SOCK"
	log "starting podman system service (log: $PODMAN_LOG)"
	spawn podman "$PODMAN_LOG" env -u CONTAINER_HOST -u NOTIFY_SOCKET \
		CONTAINERS_CONF="$PODMAN_CONF" \
		"$podman" system service --time=0 "unix://$PODMAN_SOCK"
	pid=$(<"$STATE_DIR/podman.pid")
	wait_ping "$PODMAN_SOCK" podman "$PODMAN_LOG" "$pid"
	log "podman service is up (pid $pid, unix://$PODMAN_SOCK)"
}

cmd_start() {
	(($# == 1)) || die "usage: engine.sh start docker|podman"
	case $1 in
	docker) start_docker ;;
	podman) start_podman ;;
	*) die "unknown engine: $1 (docker|podman)" ;;
	esac
}

cmd_stop() {
	(($# == 1)) || die "usage: engine.sh stop docker|podman"
	local name pid i
	case $1 in
	docker) name=dockerd ;;
	podman) name=podman ;;
	*) die "unknown engine: $1 (docker|podman)" ;;
	esac
	if ! pid=$(running_pid "$name"); then
		rm -f "$STATE_DIR/$name.pid"
		return 0
	fi
	need_root
	log "stopping $name (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 120; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "$name did not exit after 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$STATE_DIR/$name.pid"
}

# The pid of a running engine: the one this script started, else (dockerd
# started some other way) the pid dockerd records itself. Fault tests send it
# SIGKILL, SIGSTOP and SIGCONT.
engine_pid() {
	local pid
	case $1 in
	docker)
		pid=$(running_pid dockerd) && {
			printf '%s\n' "$pid"
			return 0
		}
		pid=$(cat /var/run/docker.pid 2>/dev/null) || pid=
		if [[ $pid =~ ^[0-9]+$ ]] && [[ -r /proc/$pid/cmdline ]] &&
			tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q dockerd; then
			printf '%s\n' "$pid"
			return 0
		fi
		die "no running dockerd found ($STATE_DIR/dockerd.pid, /var/run/docker.pid)"
		;;
	podman)
		pid=$(running_pid podman) ||
			die "no running podman system service started by this script ($STATE_DIR/podman.pid)"
		printf '%s\n' "$pid"
		;;
	*) die "unknown engine: $1 (docker|podman)" ;;
	esac
}

# A signal to the engine must reach whatever answers on its socket: with a
# second listener (systemd socket activation, a stray earlier service) a
# stopped or killed engine would still seem to answer.
cmd_pid() {
	(($# == 1)) || die "usage: engine.sh pid docker|podman"
	local pid sock others
	pid=$(engine_pid "$1")
	case $1 in
	docker) sock=$DOCKER_SOCK ;;
	podman) sock=$PODMAN_SOCK ;;
	esac
	if command -v ss >/dev/null; then
		others=$(listeners "$sock" | grep -vx "$pid" | tr '\n' ' ' || true)
		listeners "$sock" | grep -qx "$pid" ||
			die "$1 pid $pid does not listen on $sock (listening: ${others:-nothing})"
		[[ -z $others ]] ||
			die "$1 pid $pid is not alone on $sock: pids ${others% } listen there too (systemd units: $(cmd_systemd_units "$1" | tr '\n' ' '))"
	fi
	printf '%s\n' "$pid"
}

# Units of a systemd that runs as init and serves this engine, active now.
cmd_systemd_units() {
	(($# == 1)) || die "usage: engine.sh systemd-units docker|podman"
	local unit units
	case $1 in
	docker) units=(docker.socket docker.service) ;;
	podman) units=(podman.socket podman.service) ;;
	*) die "unknown engine: $1 (docker|podman)" ;;
	esac
	[[ -d /run/systemd/system ]] && command -v systemctl >/dev/null || return 0
	for unit in "${units[@]}"; do
		systemctl is-active --quiet "$unit" 2>/dev/null && printf '%s\n' "$unit"
	done
	return 0
}

cmd_ensure() {
	local sock
	sock=$(cmd_discover "$@")
	ping_sock "$sock" && return 0
	case $sock in
	"$DOCKER_SOCK" | /run/docker.sock) start_docker ;;
	"$PODMAN_SOCK") start_podman ;;
	*) die "no engine answers on $sock, and it is not a socket this script can start" ;;
	esac
}

cmd_use() {
	local name=${1:-} opt=()
	case $name in
	'') ;;
	docker) opt=(--engine "unix://$DOCKER_SOCK") ;;
	podman) opt=(--engine "unix://$PODMAN_SOCK") ;;
	unix:///*) opt=(--engine "$name") ;;
	*) die "an engine is docker, podman or unix:///path, not '$name'" ;;
	esac
	cmd_ensure "${opt[@]}" >&2
	cmd_discover "${opt[@]}"
}

main() {
	(($# >= 1)) || {
		usage
		exit 2
	}
	local cmd=$1
	shift
	case $cmd in
	discover) cmd_discover "$@" ;;
	kind) cmd_kind "$@" ;;
	ping) cmd_ping "$@" ;;
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	pid) cmd_pid "$@" ;;
	systemd-units) cmd_systemd_units "$@" ;;
	ensure) cmd_ensure "$@" ;;
	use) cmd_use "$@" ;;
	podman-conf) ensure_podman_conf ;;
	podman)
		CONTAINERS_CONF=$(ensure_podman_conf)
		export CONTAINERS_CONF
		exec podman "$@"
		;;
	-h | --help | help) usage ;;
	*)
		usage
		die "unknown command: $cmd"
		;;
	esac
}

main "$@"
