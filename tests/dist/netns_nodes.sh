#!/usr/bin/env bash
# Two nodes on one machine: two network namespaces joined by a virtual
# Ethernet pair, each with its own host name and an address that exists only
# inside it (10.213.77.1 and .2). torchrun runs on both with the c10d
# rendezvous backend (node a hosts it), one rank per node, and the LeNet-5
# demo trains across them with Gloo over the veth pair. Its final weights
# must equal, byte for byte, those of the same job on one machine (two ranks
# under one torchrun: the same global batch, split the same way).
#
# With `leave`, an elastic job instead (--nnodes 1:2, checkpoints every 5 steps in a folder
# both nodes see) loses node b: once the checkpoint of step 5 exists, node
# b's processes (torchrun and its worker) are killed (SIGKILL: the node is gone). Node a's
# worker fails on the lost peer, its torchrun restarts it (--max-restarts
# 1), the rendezvous closes with node a alone, and the job goes on over one
# rank from the newest checkpoint to step 30. Its weights must equal, byte
# for byte, those of the same course on one machine: two ranks up to the
# step it resumed from, then one rank from that checkpoint (the global
# batch is 256 images whatever the rank count, split by rank, so the
# course is well defined).
#
#   netns_nodes.sh equal|leave DDP_LENET5 DATA_DIR
#
# The torchrun is $CTORCH_TORCHRUN, as for scripts/ddp. Needs root (ip
# netns, veth, a private UTS namespace): otherwise it says why and skips
# (exit 77). Everything it makes (namespaces, links, /etc/netns/<name>) goes
# when it ends.
set -u
mode=$1 prog=$2 data=$3
case "$mode" in equal | leave) ;; *) echo "usage: netns_nodes.sh equal|leave DDP_LENET5 DATA_DIR" >&2; exit 2 ;; esac
root="$(cd "$(dirname "$0")/../.." && pwd)"
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "network namespaces need root (ip netns add)"
command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2)"
command -v unshare >/dev/null 2>&1 || skip "no unshare (util-linux)"
read -r -a torchrun <<< "${CTORCH_TORCHRUN:-torchrun}"

tag=$$
ns_a=ctorch-a-$tag ns_b=ctorch-b-$tag
if_a=cta$tag if_b=ctb$tag  # interface names: 15 characters at most
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ctorch-netns.XXXXXX")"
cleanup() {
  ip netns del "$ns_a" 2>/dev/null  # the veth pair goes with its namespaces
  ip netns del "$ns_b" 2>/dev/null
  rm -rf "/etc/netns/$ns_a" "/etc/netns/$ns_b" "$tmp"
  rmdir /etc/netns 2>/dev/null
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done
  exit 1
}

ip netns add "$ns_a" 2>"$tmp/ip.err" || skip "cannot make a network namespace here: $(cat "$tmp/ip.err")"
ip netns add "$ns_b" || fail "ip netns add $ns_b"
ip link add "$if_a" netns "$ns_a" type veth peer name "$if_b" netns "$ns_b" 2>"$tmp/ip.err" ||
  skip "cannot make a veth pair here: $(cat "$tmp/ip.err")"
ip -n "$ns_a" addr add 10.213.77.1/24 dev "$if_a" && ip -n "$ns_b" addr add 10.213.77.2/24 dev "$if_b" &&
  ip -n "$ns_a" link set "$if_a" up && ip -n "$ns_b" link set "$if_b" up &&
  ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up || fail "setting up the veth pair"
# torchrun tells the other node its address by host name (socket.getfqdn), as
# Gloo does without GLOO_SOCKET_IFNAME: each node gets its own name, and
# `ip netns exec` shows each namespace its own /etc/hosts.
for ns in "$ns_a" "$ns_b"; do
  mkdir -p "/etc/netns/$ns"
  printf '127.0.0.1 localhost\n10.213.77.1 ctorch-node-a\n10.213.77.2 ctorch-node-b\n' >"/etc/netns/$ns/hosts"
done

node() {  # NAMESPACE HOSTNAME INTERFACE LOG [PROGRAM ARGS]
  local ns=$1 name=$2 ifname=$3 log=$4
  shift 4
  timeout -k 10 240 ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$name" \
    env GLOO_SOCKET_IFNAME="$ifname" "${torchrun[@]}" --nnodes 2 --nproc_per_node 1 --rdzv_backend c10d \
    --rdzv_endpoint 10.213.77.1:29400 --rdzv_id ctorch-netns --max_restarts 0 --monitor_interval 0.5 \
    --redirects 1 --tee 1 --log_dir "$tmp/logs-$name" --no_python "$@" >"$log" 2>&1
}
if [ "$mode" = equal ]; then
run=(--steps 20 --threads 1 --data "$data")
node "$ns_a" ctorch-node-a "$if_a" "$tmp/node-a.log" "$prog" "${run[@]}" --save "$tmp/two-nodes.pt" &
pid_a=$!
node "$ns_b" ctorch-node-b "$if_b" "$tmp/node-b.log" "$prog" "${run[@]}" &
pid_b=$!
wait "$pid_a" || { wait "$pid_b"; fail "node a's torchrun failed"; }
wait "$pid_b" || fail "node b's torchrun failed"
grep -q "data-parallel over 2 ranks" "$tmp/node-a.log" || fail "node a's rank 0 did not train over 2 ranks"

"$root/scripts/ddp" -n 2 -t 240 -- "$prog" "${run[@]}" --save "$tmp/one-machine.pt" >"$tmp/one-machine.log" 2>&1 ||
  fail "the same job on one machine failed"
cmp "$tmp/two-nodes.pt" "$tmp/one-machine.pt" || fail "the two nodes' weights differ from one machine's"
echo "two network-namespace nodes trained LeNet-5 for 20 steps over a veth pair: weights equal to one machine's"
exit 0
fi

# The elastic job that loses node b.
elastic=(--nnodes 1:2 --max_restarts 1 --rdzv_conf "last_call_timeout=1,join_timeout=60")
run=(--steps 30 --threads 1 --data "$data" --checkpoint-dir "$tmp/ckpt" --checkpoint-every 5)
node "$ns_a" ctorch-node-a "$if_a" "$tmp/elastic-a.log" "${elastic[@]}" "$prog" "${run[@]}" --save "$tmp/elastic.pt" &
pid_a=$!
# (its shell's stderr quiet: it reports the kill below)
node "$ns_b" ctorch-node-b "$if_b" "$tmp/elastic-b.log" "${elastic[@]}" "$prog" "${run[@]}" 2>/dev/null &
pid_b=$!
for _ in $(seq 600); do
  [ -e "$tmp/ckpt/checkpoint-000000000005.pt" ] && break
  kill -0 "$pid_a" 2>/dev/null || break
  sleep 0.1
done
[ -e "$tmp/ckpt/checkpoint-000000000005.pt" ] || fail "the elastic job wrote no checkpoint of step 5"
# every process of node b is in its namespace
{
  ip netns pids "$ns_b" | xargs -r kill -KILL
  wait "$pid_b"
} 2>/dev/null
wait "$pid_a" || fail "node a's torchrun did not go on without node b"
resumed=$(sed -n 's/.*resuming from .*checkpoint-0*\([0-9][0-9]*\)\.pt.*/\1/p' "$tmp/elastic-a.log" | tail -1)
[ -n "$resumed" ] || fail "node a did not resume from a checkpoint after node b left"
grep -q "ranks=1\$" "$tmp/elastic-a.log" || fail "node a did not end over one rank"
# The same course on one machine.
"$root/scripts/ddp" -n 2 -t 240 -- "$prog" --steps "$resumed" --threads 1 --data "$data" \
  --checkpoint-dir "$tmp/ckpt-ref" --checkpoint-every 5 >"$tmp/ref-two.log" 2>&1 || fail "the reference's two-rank part failed"
"$root/scripts/ddp" -n 1 -t 240 -- "$prog" --steps 30 --threads 1 --data "$data" --checkpoint-dir "$tmp/ckpt-ref" \
  --checkpoint-every 5 --save "$tmp/elastic-ref.pt" \
  >"$tmp/ref-one.log" 2>&1 || fail "the reference's one-rank part failed"
grep -q "resuming from .*checkpoint-0*$resumed.pt" "$tmp/ref-one.log" || fail "the reference did not resume from step $resumed"
cmp "$tmp/elastic.pt" "$tmp/elastic-ref.pt" || fail "the weights after node b left differ from the same course on one machine"
echo "node b left after step 5: node a's torchrun restarted alone, resumed from step $resumed over 1 rank: weights equal to the same course on one machine"
