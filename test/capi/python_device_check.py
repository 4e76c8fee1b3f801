"""The Python binding's device calls on torch CUDA tensors (data_ptr() and the current stream):
all-reduce (bf16 and f32), reduce-scatter, all-gather, broadcast and a send/recv ring, each
against values computed here. Exit 77 (skipped) where torch, a GPU or Seam's CUDA build is
missing on any rank. Run by seam_local_launcher (TCP store)."""

import array
import os
import sys

import seam
from python_verdict import check, verdict
from seam import DType

try:
    import torch

    usable = torch.cuda.is_available() and seam.has_cuda()
except ImportError:
    usable = False

world = seam.Communicator.world()
me, n = world.rank, world.size
vote = array.array("i", [0 if usable else 1])
world.all_reduce(vote, op=seam.ReduceOp.MAX).wait()
if vote[0]:
    if me == 0:
        print("no torch, GPU or CUDA build on some rank: skipped")
    world.close()
    sys.exit(77)

torch.cuda.set_device(int(os.environ.get("SEAM_LOCAL_RANK", me)) % torch.cuda.device_count())
world.device_init()
stream = torch.cuda.current_stream().cuda_stream
for dtype, seam_dtype in ((torch.float32, DType.F32), (torch.bfloat16, DType.BF16)):
    x = torch.full((4096,), float(me + 1), dtype=dtype, device="cuda")
    world.all_reduce_device(x.data_ptr(), x.data_ptr(), x.numel(), seam_dtype, stream=stream).wait()
    check(torch.all(x == n * (n + 1) / 2).item(), f"all_reduce {dtype}")

k = 1000
send = torch.arange(n * k, dtype=torch.float32, device="cuda") * (me + 1)
block = torch.empty(k, dtype=torch.float32, device="cuda")
world.reduce_scatter_device(send.data_ptr(), block.data_ptr(), k, DType.F32, stream=stream).wait()
expect = torch.arange(me * k, (me + 1) * k, dtype=torch.float32, device="cuda") * (n * (n + 1) / 2)
check(torch.equal(block, expect), "reduce_scatter")

mine = torch.full((3,), float(me), device="cuda")
gathered = torch.empty(3 * n, device="cuda")
world.all_gather_device(mine.data_ptr(), gathered.data_ptr(), 3, DType.F32, stream=stream).wait()
check(torch.equal(gathered.cpu(), torch.arange(n).repeat_interleave(3).float()), "all_gather")

buffer = torch.full((257,), 42.0 if me == 0 else -1.0, device="cuda")
world.broadcast_device(buffer.data_ptr(), 257, DType.F32, 0, stream=stream).wait()
check(torch.all(buffer == 42.0).item(), "broadcast")

# A ring: each rank sends its rank to the next and receives the previous one's. A send holds its
# stream until the peer has the data, so the receives go on a stream of their own.
out = torch.full((64,), float(me), device="cuda")
got = torch.empty(64, device="cuda")
recv_stream = torch.cuda.Stream()
sent = world.send_device(out.data_ptr(), 64, DType.F32, (me + 1) % n, stream=stream)
received = world.recv_device(got.data_ptr(), 64, DType.F32, (me - 1) % n, stream=recv_stream.cuda_stream)
received.wait()
sent.wait()
torch.cuda.synchronize()
check(torch.all(got == float((me - 1) % n)).item(), "send/recv ring")

torch.cuda.synchronize()
status = verdict(world, "python binding on torch CUDA tensors")
world.close()
sys.exit(status)
