# hack/node-e2e-systemd/lib.sh: the unit state shared by systemd-run and
# systemctl (see README.md). A unit is a directory $STATE/<unit> with
#   cmd  its command line, NUL-separated
#   log  the file its output is appended to
#   pid  the process ID of its last start
STATE=${FAKE_SYSTEMD_STATE:-/run/gokubelet/fake-systemd}
mkdir -p "$STATE"

fs_die() { echo "$(basename "$0") (hack/node-e2e-systemd): $*" >&2; exit 1; }

# fs_running UNIT: whether the unit's process is alive (a zombie is not).
fs_running() {
  local pid st
  pid=$(cat "$STATE/$1/pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  st=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$st" ] && [ "$st" != Z ]
}

# fs_start UNIT: starts the recorded command in its own session, its output
# appended to the recorded log, and records its process ID.
fs_start() {
  local u=$1 log args=()
  log=$(cat "$STATE/$u/log")
  mapfile -d '' args <"$STATE/$u/cmd"
  [ ${#args[@]} -gt 0 ] || fs_die "unit $u has no command"
  # A background job of a non-interactive shell is not a process group
  # leader, so setsid does not fork: $! is the command's own process ID.
  (exec setsid "${args[@]}" >>"$log" 2>&1 </dev/null) &
  echo $! >"$STATE/$u/pid"
}

# fs_stop UNIT WAIT: SIGTERM to the unit's process; with WAIT=1, waits for it
# to exit and sends SIGKILL after 90 s, as systemd's default stop timeout.
fs_stop() {
  local u=$1 wait=$2 pid i
  fs_running "$u" || return 0
  pid=$(cat "$STATE/$u/pid")
  kill -TERM "$pid" 2>/dev/null || true
  [ "$wait" = 1 ] || return 0
  for ((i = 0; i < 900; i++)); do
    fs_running "$u" || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    fs_running "$u" || return 0
    sleep 0.1
  done
  fs_die "unit $u (process $pid) did not exit after SIGKILL"
}

fs_known() { [ -f "$STATE/$1/cmd" ] || fs_die "unit $1 not loaded (only units started with systemd-run are known)"; }
