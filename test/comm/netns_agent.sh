#!/usr/bin/env bash
# Open MPI's rsh agent for `netns_test.sh --mpirun`: "netns_agent.sh HOST CMD..." runs CMD (the
# second host's orted) in that host's network namespace ($SEAM_NETNS_B), with its own host name,
# IPC and /dev/shm, as on another machine.
shift
exec ip netns exec "$SEAM_NETNS_B" unshare --uts --ipc --mount \
  sh -c "hostname host-b && mount -t tmpfs tmpfs /dev/shm && $*"
