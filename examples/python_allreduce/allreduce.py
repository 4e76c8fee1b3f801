"""An all-reduce through Seam's Python binding, from an installed prefix:
    PYTHONPATH=<prefix>/lib/python mpirun -n 3 python3 allreduce.py
Every rank sums 0..N-1 scaled by its rank + 1, then checks the result."""

import array
import sys

import seam

with seam.Communicator.world() as world:
    n = 1000
    data = array.array("f", [(world.rank + 1.0) * i for i in range(n)])
    world.all_reduce(data).wait()  # in place; returns a Work at once
    ranks_sum = world.size * (world.size + 1) / 2
    wrong = sum(v != ranks_sum * i for i, v in enumerate(data))
    if world.rank == 0:
        print(f"seam python: all-reduce over {world.size} ranks: {'WRONG' if wrong else 'ok'}")
sys.exit(1 if wrong else 0)
