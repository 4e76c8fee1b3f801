#!/usr/bin/env bash
# Two "hosts" on one machine: network namespaces joined by a veth pair on 10.77.0.0/24, two ranks
# in each (or --per-host N), bootstrapped through the TCP store (served by rank 0 at 10.77.0.1). Within a host the
# ranks use shared memory, across hosts UCX over TCP (the composite transport).
#   netns_test.sh LAUNCHER RANK_BINARY [ARGS...]           run the binary; every rank must pass
#   netns_test.sh --cut LAUNCHER FAULT_BINARY [ARGS...]    take the link down midway; every rank
#                                                          must fail with a CommError, no hang
#   netns_test.sh --kill R LAUNCHER FAULT_BINARY [ARGS...] rank R SIGKILLs itself (the binary's
#                                                          ARGS say when); every other rank must
#                                                          fail with a CommError within 5 s
#   netns_test.sh --interleaved LAUNCHER RANK_BINARY ...   ranks 0 and 2 on the first host, 1 and 3
#                                                          on the second (else 0, 1 and 2, 3)
#   netns_test.sh --rate RATE LAUNCHER RANK_BINARY ...     the link shaped to RATE each way (tc tbf,
#                                                          e.g. 1gbit): benchmarks over a network
#                                                          slower than memory
#   netns_test.sh --lossy LAUNCHER RANK_BINARY ...         the link at 1 Gbit/s each way dropping 1% of
#                                                          packets at random (iptables statistic; GSO,
#                                                          TSO and GRO off so a drop is one packet), and
#                                                          1 ms later each way where $SEAM_NFQ_DELAY
#                                                          names test/comm/nfq_delay.c's binary
#   netns_test.sh --per-host N LAUNCHER RANK_BINARY ...    N ranks on each host [2]
#   netns_test.sh [OPTIONS] --mpirun MPIRUN_ARGS...        mpirun on the first host starts the
#                                                          ranks (the second host's through
#                                                          netns_agent.sh); each host also has its
#                                                          own host name, IPC and /dev/shm, so
#                                                          Open MPI's own calls see two machines
# (the options in this order)
# Exits 77 (CTest: skipped) when not root or without ip(8)/network namespaces.
set -u
cut=0 interleaved=0 rate= victim=
if [ "${1:-}" = "--cut" ]; then cut=1; shift; fi
if [ "${1:-}" = "--kill" ]; then victim=$2; shift 2; fi
if [ "${1:-}" = "--interleaved" ]; then interleaved=1; shift; fi
if [ "${1:-}" = "--rate" ]; then rate=$2; shift 2; fi
lossy=0
if [ "${1:-}" = "--lossy" ]; then lossy=1 rate=1gbit; shift; fi
per_host=2
if [ "${1:-}" = "--per-host" ]; then per_host=$2; shift 2; fi
mpirun_mode=0 launcher=
if [ "${1:-}" = "--mpirun" ]; then mpirun_mode=1; else launcher=$1; fi
shift
if [ "$(id -u)" != 0 ]; then echo "SKIP: the multi-host test needs root (ip netns)"; exit 77; fi
if ! command -v ip > /dev/null; then echo "SKIP: the multi-host test needs ip (iproute2)"; exit 77; fi

a=seam_a_$$ b=seam_b_$$
delayers=()
cleanup() {
  [ ${#delayers[@]} -gt 0 ] && kill "${delayers[@]}" 2> /dev/null
  ip netns del "$a" 2> /dev/null; ip netns del "$b" 2> /dev/null
}
trap cleanup EXIT
if ! ip netns add "$a" 2> /dev/null || ! ip netns add "$b" 2> /dev/null; then
  echo "SKIP: cannot create network namespaces here"; exit 77
fi
if ! ip link add "va$$" type veth peer name "vb$$" 2> /dev/null; then
  echo "SKIP: cannot create a veth pair here"; exit 77
fi
set -e
ip link set "va$$" netns "$a"
ip link set "vb$$" netns "$b"
# The same device name in both namespaces, so one UCX_NET_DEVICES fits every rank.
ip -n "$a" link set "va$$" name seamveth
ip -n "$b" link set "vb$$" name seamveth
ip -n "$a" addr add 10.77.0.1/24 dev seamveth
ip -n "$b" addr add 10.77.0.2/24 dev seamveth
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; ip -n "$ns" link set seamveth up; done
if [ -n "$rate" ]; then
  for ns in "$a" "$b"; do ip netns exec "$ns" tc qdisc add dev seamveth root tbf rate "$rate" burst 1mb latency 100ms; done
fi
if [ $lossy = 1 ]; then
  if ! command -v ethtool > /dev/null || ! command -v iptables > /dev/null; then
    echo "SKIP: the lossy link needs ethtool and iptables"; exit 77
  fi
  for ns in "$a" "$b"; do
    ip netns exec "$ns" ethtool -K seamveth gso off tso off gro off > /dev/null 2>&1
    ip netns exec "$ns" iptables -A OUTPUT -o seamveth -m statistic --mode random --probability 0.01 -j DROP
    if [ -n "${SEAM_NFQ_DELAY:-}" ]; then
      ip netns exec "$ns" iptables -A OUTPUT -o seamveth -j NFQUEUE --queue-num 7 --queue-bypass
      ip netns exec "$ns" "$SEAM_NFQ_DELAY" 7 1000 &
      delayers+=($!)
    fi
  done
  if [ -n "${SEAM_NFQ_DELAY:-}" ]; then
    sleep 0.2  # the delayers bind their queues
    echo "lossy link: 1 Gbit/s, 1% drop, 1 ms delay each way"
  else
    echo "lossy link: 1 Gbit/s, 1% drop (no delay: SEAM_NFQ_DELAY unset)"
  fi
fi
set +e

if [ $mpirun_mode = 1 ]; then
  export SEAM_NETNS_B=$b OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  map=()
  [ $interleaved = 1 ] && map=(--map-by node)
  ip netns exec "$a" unshare --uts --ipc --mount \
    sh -c 'hostname host-a && mount -t tmpfs tmpfs /dev/shm && exec "$0" "$@"' \
    mpirun --host "10.77.0.1:$per_host,10.77.0.2:$per_host" -n $((2 * per_host)) "${map[@]}" \
    --mca plm_rsh_agent "$(cd "$(dirname "$0")" && pwd)/netns_agent.sh" \
    --mca oob_tcp_if_include seamveth -x UCX_NET_DEVICES=seamveth "$@"
  exit
fi
# Rank 0 serves the store, so it is on the first host either way.
n=$((2 * per_host))
common=(-n $n --store-host 10.77.0.1 --env UCX_TLS=tcp,self --env UCX_NET_DEVICES=seamveth)
for ((r = 0; r < n; ++r)); do
  if [ $interleaved = 1 ]; then host=$((r % 2)); else host=$((r / per_host)); fi
  ns=$a host_name=host-a
  [ $host = 1 ] && ns=$b host_name=host-b
  common+=(--ns "$r=$ns" --env "$r:SEAM_HOSTNAME=$host_name")
done
if [ $cut = 1 ]; then
  "$launcher" "${common[@]}" --env SEAM_TIMEOUT_MS=3000 --cut-after-ms 3000 \
    --cut-cmd "ip -n $b link set seamveth down" --max-detect-ms 5000 --timeout-s 60 -- "$@"
elif [ -n "$victim" ]; then
  "$launcher" "${common[@]}" --env SEAM_TIMEOUT_MS=3000 --expect-killed "$victim" \
    --max-detect-ms 5000 --timeout-s 60 -- "$@"
else
  "$launcher" "${common[@]}" --timeout-s 240 -- "$@"
fi
rc=$?
if [ $lossy = 1 ]; then  # the drops happened: say how many
  for ns in "$a" "$b"; do
    echo "lossy link, $ns: $(ip netns exec "$ns" iptables -L OUTPUT -v -n -x | awk '/statistic/ {print $1 " packets dropped"}')"
  done
fi
exit $rc
