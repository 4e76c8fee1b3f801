#!/bin/sh
# on_rank.sh RANK WRAPPER... -- COMMAND...: under mpirun, runs COMMAND through WRAPPER on that
# rank only (e.g. `env NAME=VALUE`, `unshare --pid --fork`), to start ranks that disagree.
rank=$1; shift
wrapper=""
while [ "$1" != "--" ]; do wrapper="$wrapper $1"; shift; done
shift
if [ "${OMPI_COMM_WORLD_RANK:-}" = "$rank" ]; then exec $wrapper "$@"; fi
exec "$@"
