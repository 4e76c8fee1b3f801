"""The Python binding (python/seam.py) on every rank: each host collective against values computed
here, split and group communicators, non-blocking completion, and the errors Python sees (wrong
buffers before anything is sent; ranks that disagree get SEAM_ERR_MISMATCH on every rank and the
communicator goes on). Run by seam_local_launcher (TCP store) at 3 ranks; exit 0 when all held."""

import array
import sys

import seam
from python_verdict import check, failures, verdict
from seam import DType, ReduceOp, SeamError


def expect_raises(kind, fn, what):
    try:
        fn()
    except kind:
        return
    failures.append(f"{what}: no {kind.__name__}")


with seam.Communicator.world() as world:
    me, n = world.rank, world.size

    # All-reduce: f32 in place, i32 max and f64 min out of place, bf16 words with dtype=.
    a = array.array("f", [me + 1.0] * 1000)
    world.all_reduce(a).wait()
    check(all(v == n * (n + 1) / 2 for v in a), "all_reduce f32 sum")
    i32, out = array.array("i", [me * 7 - 3] * 5), array.array("i", [0] * 5)
    world.all_reduce(i32, out, op=ReduceOp.MAX).wait()
    check(list(out) == [(n - 1) * 7 - 3] * 5, "all_reduce i32 max")
    f64, low = array.array("d", [float(me) + 0.5]), array.array("d", [0.0])
    world.all_reduce(f64, low, op=ReduceOp.MIN).wait()
    check(low[0] == 0.5, "all_reduce f64 min")
    bf16 = array.array("H", [0x3F80] * 8)  # 1.0
    world.all_reduce(bf16, dtype=DType.BF16).wait()
    check(array.array("f", array.array("I", [w << 16 for w in bf16]).tobytes()).tolist() == [float(n)] * 8,
          "all_reduce bf16 sum")

    # Reduce-scatter: rank r sends (r + 1) * (i + 1); block b of the sum is b's.
    k = 4
    send = array.array("f", [(me + 1.0) * (i + 1) for i in range(n * k)])
    block = array.array("f", [0.0] * k)
    world.reduce_scatter(send, block).wait()
    total = n * (n + 1) / 2
    check(list(block) == [total * (me * k + j + 1) for j in range(k)], "reduce_scatter")
    # Reduce-scatterv: rank r gets r elements (rank 0 none).
    counts = list(range(n))
    mine = array.array("f", [0.0] * counts[me])
    world.reduce_scatterv(array.array("f", [me + 1.0] * sum(counts)), mine, counts).wait()
    check(list(mine) == [total] * counts[me], "reduce_scatterv")

    # All-gather(v) and broadcast.
    gathered = array.array("i", [0] * (2 * n))
    world.all_gather(array.array("i", [me * 10, me * 10 + 1]), gathered).wait()
    check(list(gathered) == [r * 10 + j for r in range(n) for j in range(2)], "all_gather")
    counts = [r + 1 for r in range(n)]
    gathered = array.array("i", [0] * sum(counts))
    world.all_gatherv(array.array("i", [me] * counts[me]), gathered, counts).wait()
    check(list(gathered) == [r for r in range(n) for _ in range(r + 1)], "all_gatherv")
    message = bytearray(b"from the root" if me == n - 1 else b"?" * 13)
    world.broadcast(message, root=n - 1).wait()
    check(message == b"from the root", "broadcast")

    # Non-blocking: test() until done, then a barrier.
    work = world.all_reduce(array.array("f", [1.0] * 100000))
    while not work.test():
        pass
    world.barrier().wait()

    # Split by parity, and a group of the first and last ranks.
    half = world.split(me % 2, me)
    value = array.array("i", [me])
    half.all_reduce(value).wait()
    check(value[0] == sum(r for r in range(n) if r % 2 == me % 2), "split all_reduce")
    half.close()
    ends = world.group([0, n - 1])
    check((ends is None) == (me not in (0, n - 1)), "group membership")
    if ends is not None:
        value = array.array("i", [me])
        ends.all_reduce(value).wait()
        check(value[0] == n - 1, "group all_reduce")
        ends.close()

    # Bad buffers fail here, before anything is sent; disagreeing ranks fail together.
    expect_raises(TypeError, lambda: world.all_reduce(b"read-only"), "bytes")
    expect_raises(ValueError, lambda: world.all_reduce(bytearray(8)), "reducing bytes")
    expect_raises(TypeError, lambda: world.all_reduce(array.array("h", [0])), "16-bit words without dtype=")
    expect_raises(ValueError, lambda: world.all_reduce(bytearray(6), dtype=DType.F32), "partial element")
    expect_raises(ValueError, lambda: world.all_gatherv(array.array("i", [0]), array.array("i", [0]), [1]),
                  "counts of the wrong length")
    expect_raises(ValueError, lambda: world.all_reduce(array.array("f", [0.0] * 4), array.array("f", [0.0] * 3)),
                  "a recv shorter than send")
    expect_raises(ValueError, lambda: world.all_gather(array.array("i", [0]), array.array("i", [0] * (n - 1))),
                  "an all-gather recv of too few blocks")
    expect_raises(ValueError, lambda: world.reduce_scatterv(array.array("f", [0.0]), array.array("f", [0.0] * 9),
                                                            [1] * n), "reduce_scatterv sizes against counts")
    try:
        world.all_reduce(array.array("f", [1.0] * (4 if me == 0 else 5))).wait()
        failures.append("disagreeing counts: no error")
    except SeamError as e:
        check(e.status == "SEAM_ERR_MISMATCH", f"disagreeing counts: {e}")
    after = array.array("f", [1.0] * 3)
    world.all_reduce(after).wait()
    check(list(after) == [float(n)] * 3, "all_reduce after a mismatch")

    status = verdict(world, "python binding")
sys.exit(status)
