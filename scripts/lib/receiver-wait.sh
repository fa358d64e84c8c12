# Sourced by the demo scripts: waiting on a running md_receiver through its log.
# Needs $receiver_pid and $log (the receiver's stderr) set by the caller.

# Polls (a period, not a synchronization delay) until `$@` succeeds; fails after 30 s or when
# the receiver has exited, showing its log.
wait_until() {
    for ((i = 0; i < 1500; i++)); do
        if "$@"; then return 0; fi
        kill -0 "$receiver_pid" 2>/dev/null || break
        sleep 0.02
    done
    cat "$log" >&2
    echo "$(basename "$0"): timed out or md_receiver exited, waiting for: $*" >&2
    exit 1
}

# Every feed logged two stats lines in a row at 0 pkts/s after line $1: the sockets are drained.
all_idle() {
    tail -n +"$1" "$log" | awk '
        { for (i = 1; i + 6 <= NF; i++) if ($i == "stats" && $(i + 2) == "|")
              idle[$(i + 1)] = $(i + 6) == "0" ? idle[$(i + 1)] + 1 : 0 }
        END { n = 0; for (f in idle) { n++; if (idle[f] < 2) exit 1 } exit n == 0 }'
}
