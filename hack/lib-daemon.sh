# Starting long-lived daemons from the hack/ scripts. Sourced, not run.

# gk_daemon CMD...: starts CMD in the background in its own session, with
# no open file descriptor of ours but stdin, stdout and stderr (redirect
# those on the call). A daemon that inherited a descriptor would keep any
# lock on it (flock(1) around `make test`, the cluster lock) held for as
# long as it lives. $! is the daemon's pid.
gk_daemon() {
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid "$@"
  ) &
}
