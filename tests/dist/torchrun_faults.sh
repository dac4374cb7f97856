#!/usr/bin/env bash
# Faults of a job under torchrun (started through scripts/ddp, so with the
# torchrun in $CTORCH_TORCHRUN):
#
#   torchrun_faults.sh restart DDP_LENET5 DATA_DIR
#     A worker killed mid-training (the demo's fault drill: the last rank
#     SIGKILLs itself before step 25 of the first attempt) is restarted by
#     torchrun (--max-restarts 1), the group resumes from rank 0's checkpoint
#     of step 20, and its final weights equal, byte for byte, those of the same
#     30 steps run without a fault.
#   torchrun_faults.sh absent DIST_PEER
#     Rank 1 never joins (it sleeps): rank 0 fails within its 3 s group
#     timeout with a message naming the missing rank, and torchrun stops the
#     job, long before the test's own limit.
set -u
mode=$1
shift
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ctorch-faults.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done
  exit 1
}

case "$mode" in
  restart)
    prog=$1 data=$2
    run=(--steps 30 --threads 1 --data "$data")
    "$root/scripts/ddp" -n 2 -t 300 -- "$prog" "${run[@]}" --save "$tmp/straight.pt" >"$tmp/straight.log" 2>&1 ||
      fail "the run without a fault failed"
    "$root/scripts/ddp" -n 2 -r 1 -t 300 -- "$prog" "${run[@]}" --checkpoint-dir "$tmp/checkpoints" \
      --checkpoint-every 10 --kill-at-step 25 --save "$tmp/restarted.pt" >"$tmp/restarted.log" 2>&1 ||
      fail "the run with a killed worker failed (torchrun did not restart it, or the restart did not finish)"
    grep -q "fault drill: killing myself before step 25" "$tmp/restarted.log" || fail "the drill did not kill a rank"
    grep -q "resuming from .*checkpoint-000000000020.pt (epoch 1, step 20)" "$tmp/restarted.log" ||
      fail "the restarted group did not resume from the checkpoint of step 20"
    cmp "$tmp/straight.pt" "$tmp/restarted.pt" || fail "the weights after the restart differ from the run without a fault"
    echo "a worker killed at step 25, restarted by torchrun, resumed from step 20: weights equal to the run without a fault"
    ;;
  absent)
    peer=$1
    start=$(date +%s)
    # shellcheck disable=SC2016
    CTORCH_DIST_TIMEOUT_MS=3000 "$root/scripts/ddp" -n 2 -t 100 -- \
      sh -c 'if [ "$RANK" = 1 ]; then exec sleep 100; fi; exec "$0" env' "$peer" >"$tmp/absent.log" 2>&1 &&
      fail "the job succeeded with a rank missing"
    took=$(($(date +%s) - start))
    grep -q "timed out after 3000 ms waiting for rank(s) 1 of 2 to join group 0" "$tmp/absent.log" ||
      fail "rank 0's error does not name the missing rank"
    [ "$took" -lt 60 ] || fail "the job took ${took} s to fail"
    echo "a missing rank: rank 0 failed after its 3 s timeout naming rank 1; the job ended in ${took} s"
    ;;
  *)
    echo "usage: torchrun_faults.sh restart DDP_LENET5 DATA_DIR | absent DIST_PEER" >&2
    exit 2
    ;;
esac
