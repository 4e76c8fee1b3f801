#!/bin/sh
# rank_pid_namespace.sh RANK command...: runs the command in a PID namespace of its own on that
# rank only (under mpirun), as a container of the same pod would.
rank=$1; shift
if [ "${OMPI_COMM_WORLD_RANK:-}" = "$rank" ]; then exec unshare --pid --fork "$@"; fi
exec "$@"
