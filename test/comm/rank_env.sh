#!/bin/sh
# rank_env.sh RANK NAME=VALUE command...: runs the command with NAME=VALUE set on that rank only
# (under mpirun), to test ranks started with settings that disagree.
rank=$1; setting=$2; shift 2
if [ "${OMPI_COMM_WORLD_RANK:-}" = "$rank" ]; then export "$setting"; fi
exec "$@"
