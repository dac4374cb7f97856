#!/usr/bin/env bash
# Two nodes on one machine: two network namespaces joined by a virtual
# Ethernet pair, each with its own host name and an address that exists only
# inside it (10.213.77.1 and .2). torchrun runs on both with the c10d
# rendezvous backend (node a hosts it), one rank per node, and the LeNet-5
# demo trains across them with Gloo over the veth pair. Its final weights
# must equal, byte for byte, those of the same job on one machine (two ranks
# under one torchrun: the same global batch, split the same way).
#
#   netns_nodes.sh DDP_LENET5 DATA_DIR
#
# The torchrun is $CTORCH_TORCHRUN, as for scripts/ddp. Needs root (ip
# netns, veth, a private UTS namespace): otherwise it says why and skips
# (exit 77). Everything it makes (namespaces, links, /etc/netns/<name>) goes
# when it ends.
set -u
prog=$1 data=$2
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

run=(--steps 20 --threads 1 --data "$data")
node() {  # NAMESPACE HOSTNAME INTERFACE LOG [PROGRAM ARGS]
  local ns=$1 name=$2 ifname=$3 log=$4
  shift 4
  timeout -k 10 240 ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$name" \
    env GLOO_SOCKET_IFNAME="$ifname" "${torchrun[@]}" --nnodes 2 --nproc_per_node 1 --rdzv_backend c10d \
    --rdzv_endpoint 10.213.77.1:29400 --rdzv_id ctorch-netns --max_restarts 0 --monitor_interval 0.5 \
    --redirects 1 --tee 1 --log_dir "$tmp/logs-$name" --no_python "$@" >"$log" 2>&1
}
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
