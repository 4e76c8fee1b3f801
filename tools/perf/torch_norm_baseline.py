"""torch.compile's residual add + RMSNorm, timed as norm_perf_cuda times Seam's: inside CUDA graphs
of N calls, CUDA events, median of R launches, against the same measured copy bandwidth.
   python3 tools/perf/torch_norm_baseline.py [--hidden 7168] [--tokens 16,256,8192] [--graph-calls 20]"""
import argparse

import torch


def add_rms_norm(x, residual, weight, eps: float = 1e-6):
    # The reference order: FP32 sum, rounded residual, norm of the unrounded sum.
    s = x.float() + residual.float()
    residual.copy_(s.to(residual.dtype))
    var = s.pow(2).mean(-1, keepdim=True)
    return (s * torch.rsqrt(var + eps) * weight.float()).to(x.dtype)


def median_ms(fn, reps):
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for r in range(reps + 5):
        t0.record()
        fn()
        t1.record()
        t1.synchronize()
        if r >= 5:
            times.append(t0.elapsed_time(t1))
    times.sort()
    return times[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hidden", type=int, default=7168)
    p.add_argument("--tokens", default="16,256,8192")
    p.add_argument("--graph-calls", type=int, default=20)
    p.add_argument("--reps", type=int, default=50)
    a = p.parse_args()
    dev = torch.device("cuda")
    big = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    other = torch.empty_like(big)
    bound = 2 * big.numel() / (median_ms(lambda: other.copy_(big), 10) * 1e-3)
    compiled = torch.compile(add_rms_norm)
    print(f"# torch {torch.__version__}: torch.compile add + RMSNorm, bfloat16, hidden {a.hidden}, "
          f"{a.graph_calls} calls per graph launch, median of {a.reps}")
    print(f"# bound: measured device copy bandwidth {bound / 1e9:.0f} GB/s (read + write)")
    print(f"{'tokens':>8} {'time(us)':>12} {'GB/s':>12} {'%bound':>8}")
    for rows in [int(t) for t in a.tokens.split(",")]:
        x = torch.randn(rows, a.hidden, device=dev, dtype=torch.bfloat16)
        res = torch.randn_like(x)
        w = torch.randn(a.hidden, device=dev, dtype=torch.bfloat16)
        for _ in range(3):
            compiled(x, res, w)  # compile and warm up outside the graph
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            compiled(x, res, w)
            with torch.cuda.graph(g, stream=s):
                for _ in range(a.graph_calls):
                    out = compiled(x, res, w)
        torch.cuda.synchronize()
        us = median_ms(g.replay, a.reps) * 1e3 / a.graph_calls
        nbytes = 4 * x.numel() * x.element_size()
        print(f"{rows:>8} {us:>12.2f} {nbytes / (us * 1e-6) / 1e9:>12.0f} {100 * nbytes / (us * 1e-6) / bound:>7.1f}%")
        del out


if __name__ == "__main__":
    main()
