#!/usr/bin/env bash
# Two "hosts" on one machine: network namespaces joined by a veth pair on 10.77.0.0/24, two ranks
# in each, bootstrapped through the TCP store (served by rank 0 at 10.77.0.1). Within a host the
# ranks use shared memory, across hosts UCX over TCP (the composite transport).
#   netns_test.sh LAUNCHER RANK_BINARY [ARGS...]           run the binary; every rank must pass
#   netns_test.sh --cut LAUNCHER FAULT_BINARY [ARGS...]    take the link down midway; every rank
#                                                          must fail with a CommError, no hang
# Exits 77 (CTest: skipped) when not root or without ip(8)/network namespaces.
set -u
cut=0
if [ "${1:-}" = "--cut" ]; then cut=1; shift; fi
launcher=$1; shift
if [ "$(id -u)" != 0 ]; then echo "SKIP: the multi-host test needs root (ip netns)"; exit 77; fi
if ! command -v ip > /dev/null; then echo "SKIP: the multi-host test needs ip (iproute2)"; exit 77; fi

a=seam_a_$$ b=seam_b_$$
cleanup() { ip netns del "$a" 2> /dev/null; ip netns del "$b" 2> /dev/null; }
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
set +e

common=(-n 4 --store-host 10.77.0.1 --ns 0="$a" --ns 1="$a" --ns 2="$b" --ns 3="$b"
        --env 0:SEAM_HOSTNAME=host-a --env 1:SEAM_HOSTNAME=host-a
        --env 2:SEAM_HOSTNAME=host-b --env 3:SEAM_HOSTNAME=host-b
        --env UCX_TLS=tcp,self --env UCX_NET_DEVICES=seamveth)
if [ $cut = 1 ]; then
  "$launcher" "${common[@]}" --env SEAM_TIMEOUT_MS=3000 --cut-after-ms 3000 \
    --cut-cmd "ip -n $b link set seamveth down" --max-detect-ms 5000 --timeout-s 60 -- "$@"
else
  "$launcher" "${common[@]}" --timeout-s 240 -- "$@"
fi
