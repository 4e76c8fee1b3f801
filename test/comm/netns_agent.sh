#!/usr/bin/env bash
# Open MPI's rsh agent for the namespace hosts: "netns_agent.sh HOST CMD..." runs CMD (that host's
# orted) in the host's network namespace, with its own host name, IPC and /dev/shm, as on another
# machine. The namespace is $SEAM_NETNS_B (netns_test.sh --mpirun: two hosts), or HOST's entry in
# $SEAM_NETNS_MAP ("ADDRESS=NAMESPACE ...", netns_hosts.sh: several).
host=$1
shift
ns=${SEAM_NETNS_B:-} name=host-b
for entry in ${SEAM_NETNS_MAP:-}; do
  if [ "${entry%%=*}" = "$host" ]; then ns=${entry#*=} name=host-${host##*.}; fi
done
exec ip netns exec "$ns" unshare --uts --ipc --mount \
  sh -c "hostname $name && mount -t tmpfs tmpfs /dev/shm && $*"
