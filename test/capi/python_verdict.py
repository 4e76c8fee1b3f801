"""What the Python binding's checks share: failures collected per rank, one verdict for all."""

import array
import sys

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def verdict(world, what):
    """Sums the failures over the world, prints them and `what`'s verdict (rank 0); returns the exit status."""
    total = array.array("i", [len(failures)])
    world.all_reduce(total).wait()
    for f in failures:
        print(f"rank {world.rank}: FAILED {f}", file=sys.stderr)
    if world.rank == 0:
        print(f"{what} at {world.size} ranks: {'passed' if total[0] == 0 else 'FAILED'}")
    return 1 if total[0] else 0
