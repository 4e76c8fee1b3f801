#!/usr/bin/env bash
# N "hosts" on one machine for benchmarks: network namespaces on a bridge (10.79.0.0/24), each
# host's link shaped to RATE (tc tbf) on the way out, PER_HOST ranks each, started by mpirun
# on the first host (the others' through netns_agent.sh), so Seam and Open MPI see N machines.
#   netns_hosts.sh HOSTS PER_HOST RATE MPIRUN_ARGS... PROGRAM [ARGS...]
# Exits 77 when not root or without network namespaces.
set -u
hosts=$1 per_host=$2 rate=$3
shift 3
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root (ip netns)"; exit 77; fi
bridge=seambr$$
names=()
cleanup() {
  for ns in "${names[@]}"; do ip netns del "$ns" 2> /dev/null; done
  ip link del "$bridge" 2> /dev/null
}
trap cleanup EXIT
ip link add "$bridge" type bridge || { echo "SKIP: cannot create a bridge here"; exit 77; }
ip link set "$bridge" up
map= host_list=
for ((h = 0; h < hosts; ++h)); do
  ns=seam_h${h}_$$ addr=10.79.0.$((h + 1))
  names+=("$ns")
  ip netns add "$ns" || { echo "SKIP: cannot create network namespaces here"; exit 77; }
  ip link add "hv$h$$" type veth peer name "hb$h$$"
  ip link set "hv$h$$" netns "$ns"
  ip -n "$ns" link set "hv$h$$" name seamveth
  ip link set "hb$h$$" master "$bridge" up
  ip -n "$ns" addr add "$addr/24" dev seamveth
  ip -n "$ns" link set lo up
  ip -n "$ns" link set seamveth up
  ip netns exec "$ns" tc qdisc add dev seamveth root tbf rate "$rate" burst 1mb latency 100ms
  map+="$addr=$ns "
  host_list+="${host_list:+,}$addr:$per_host"
done
export SEAM_NETNS_MAP=$map OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ip netns exec "${names[0]}" unshare --uts --ipc --mount \
  sh -c 'hostname host-1 && mount -t tmpfs tmpfs /dev/shm && exec "$0" "$@"' \
  mpirun --host "$host_list" -n $((hosts * per_host)) \
  --mca plm_rsh_agent "$(cd "$(dirname "$0")" && pwd)/netns_agent.sh" \
  --mca oob_tcp_if_include seamveth -x UCX_NET_DEVICES=seamveth "$@"
