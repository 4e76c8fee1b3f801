#include "kernels/cuda/collectives.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/norm_device.cuh"
#include "kernels/cuda/peer_sync.cuh"

namespace seam::kernels::cuda {
namespace {

constexpr int kThreads = 512;

template <ReduceOp Op>
__device__ __forceinline__ float combine(float a, float b) {
  if constexpr (Op == ReduceOp::sum) return a + b;
  else if constexpr (Op == ReduceOp::max) return fmaxf(a, b);
  else return fminf(a, b);
}

// Peer data is read past L1: another process wrote it, and this SM may hold an older line.
template <class T>
__device__ __forceinline__ T load_peer(const T* p) {
  return __ldcg(p);
}
template <>
__device__ __forceinline__ __nv_bfloat16 load_peer(const __nv_bfloat16* p) {
  return __ushort_as_bfloat16(__ldcg(reinterpret_cast<const unsigned short*>(p)));
}
template <>
__device__ __forceinline__ __half load_peer(const __half* p) {
  return __ushort_as_half(__ldcg(reinterpret_cast<const unsigned short*>(p)));
}

/// Block b's piece of a share of len elements, in whole vectors of V but the last piece's tail.
struct Piece {
  size_t lo, hi;
};
__device__ __forceinline__ Piece piece_of(size_t len, int V) {
  const size_t b = blockIdx.x, g = gridDim.x;
  const size_t lo = len * b / g / V * V;
  const size_t hi = b + 1 == g ? len : len * (b + 1) / g / V * V;
  return {lo, hi};
}

/// dst[i] = src[i] for i in [lo, hi) of the block's piece, 16 bytes at a time where `vec`.
template <class T>
__device__ __forceinline__ void copy_piece(T* dst, const T* src, Piece p, bool vec) {
  constexpr int V = 16 / sizeof(T);
  size_t i = p.lo;
  if (vec) {
    const size_t n = (p.hi - p.lo) / V;
    const uint4* s = reinterpret_cast<const uint4*>(src + p.lo);
    uint4* d = reinterpret_cast<uint4*>(dst + p.lo);
    for (size_t k = threadIdx.x; k < n; k += blockDim.x) d[k] = __ldcg(s + k);
    i = p.lo + n * V;
  }
  for (size_t k = i + threadIdx.x; k < p.hi; k += blockDim.x) dst[k] = load_peer(src + k);
}

/// dst[i] = op over r < n of srcs[r][i], in FP32, ranks in order, one rounding.
template <class Io, ReduceOp Op, class T = typename Io::T>
__device__ __forceinline__ void reduce_piece(T* dst, const T* const* srcs, int n, Piece p, bool vec) {
  constexpr int V = 16 / sizeof(T);
  size_t i = p.lo;
  if (vec) {
    const size_t nv = (p.hi - p.lo) / V;
    for (size_t k = threadIdx.x; k < nv; k += blockDim.x) {
      const size_t at = p.lo + k * V;
      float acc[V];
      {
        const uint4 v = __ldcg(reinterpret_cast<const uint4*>(srcs[0] + at));
        const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] = Io::load(e[j]);
      }
      for (int r = 1; r < n; ++r) {
        const uint4 v = __ldcg(reinterpret_cast<const uint4*>(srcs[r] + at));
        const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] = combine<Op>(acc[j], Io::load(e[j]));
      }
      uint4 out;
      T* o = reinterpret_cast<T*>(&out);
#pragma unroll
      for (int j = 0; j < V; ++j) o[j] = Io::store(acc[j]);
      *reinterpret_cast<uint4*>(dst + at) = out;
    }
    i = p.lo + nv * V;
  }
  for (size_t k = i + threadIdx.x; k < p.hi; k += blockDim.x) {
    float acc = Io::load(load_peer(srcs[0] + k));
    for (int r = 1; r < n; ++r) acc = combine<Op>(acc, Io::load(load_peer(srcs[r] + k)));
    dst[k] = Io::store(acc);
  }
}

// One-shot all-reduce: copy in, meet, every rank reduces the whole from every workspace, meet.
template <class Io, ReduceOp Op, class T = typename Io::T>
__global__ void __launch_bounds__(kThreads) all_reduce_one_shot(CollectiveStep a, bool vec) {
  constexpr int V = 16 / sizeof(T);
  const Share sh = a.share[0];
  const Piece p = piece_of(sh.len, vec ? V : 1);
  T* mine = static_cast<T*>(a.ws[a.sync.rank]) + sh.ws;
  copy_piece(mine, static_cast<const T*>(a.send) + sh.user, p, vec);
  if (!device::barrier(a.sync, blockIdx.x == 0)) return;
  const T* srcs[kMaxRanks];
  for (int r = 0; r < a.sync.size; ++r) srcs[r] = static_cast<const T*>(a.ws[r]) + sh.ws;
  reduce_piece<Io, Op>(static_cast<T*>(a.recv) + sh.user, srcs, a.sync.size, p, vec);
  device::barrier(a.sync);
}

// Two-shot all-reduce: copy in, meet, rank r reduces share r into its workspace (and output),
// meet, every rank copies the other shares from their owners' workspaces, meet.
template <class Io, ReduceOp Op, class T = typename Io::T>
__global__ void __launch_bounds__(kThreads) all_reduce_two_shot(CollectiveStep a, bool vec) {
  constexpr int V = 16 / sizeof(T);
  const int me = a.sync.rank, n = a.sync.size;
  const T* send = static_cast<const T*>(a.send);
  T* recv = static_cast<T*>(a.recv);
  T* mine = static_cast<T*>(a.ws[me]);
  for (int s = 0; s < n; ++s) {
    const Share sh = a.share[s];
    copy_piece(mine + sh.ws, send + sh.user, piece_of(sh.len, vec ? V : 1), vec);
  }
  if (!device::barrier(a.sync, blockIdx.x == 0)) return;
  {
    const Share sh = a.share[me];
    const Piece p = piece_of(sh.len, vec ? V : 1);
    const T* srcs[kMaxRanks];
    for (int r = 0; r < n; ++r) srcs[r] = static_cast<const T*>(a.ws[r]) + sh.ws;
    // In place in this rank's workspace: each element is read from every rank, then written.
    reduce_piece<Io, Op>(mine + sh.ws, srcs, n, p, vec);
    __syncthreads();
    copy_piece(recv + sh.user, mine + sh.ws, p, vec);
  }
  if (!device::barrier(a.sync)) return;
  for (int s = 0; s < n; ++s) {
    if (s == me) continue;
    const Share sh = a.share[s];
    copy_piece(recv + sh.user, static_cast<const T*>(a.ws[s]) + sh.ws, piece_of(sh.len, vec ? V : 1), vec);
  }
  device::barrier(a.sync);
}

// Reduce-scatter(v): copy the peers' blocks in, meet, reduce this rank's block (its own part read
// from send), meet.
template <class Io, ReduceOp Op, class T = typename Io::T>
__global__ void __launch_bounds__(kThreads) reduce_scatter_kernel(CollectiveStep a, size_t recv_offset, bool vec) {
  constexpr int V = 16 / sizeof(T);
  const int me = a.sync.rank, n = a.sync.size;
  const T* send = static_cast<const T*>(a.send);
  T* mine = static_cast<T*>(a.ws[me]);
  for (int s = 0; s < n; ++s) {
    if (s == me) continue;
    const Share sh = a.share[s];
    copy_piece(mine + sh.ws, send + sh.user, piece_of(sh.len, vec ? V : 1), vec);
  }
  if (!device::barrier(a.sync, blockIdx.x == 0)) return;
  const Share sh = a.share[me];
  const T* srcs[kMaxRanks];
  for (int r = 0; r < n; ++r) srcs[r] = r == me ? send + sh.user : static_cast<const T*>(a.ws[r]) + sh.ws;
  reduce_piece<Io, Op>(static_cast<T*>(a.recv) + recv_offset, srcs, n, piece_of(sh.len, vec ? V : 1), vec);
  device::barrier(a.sync);
}

// All-gather(v): copy this rank's block in, meet, copy every peer's block out, meet.
template <class Io, class T = typename Io::T>
__global__ void __launch_bounds__(kThreads) all_gather_kernel(CollectiveStep a, size_t send_offset, bool vec) {
  constexpr int V = 16 / sizeof(T);
  const int me = a.sync.rank, n = a.sync.size;
  const T* send = static_cast<const T*>(a.send) + send_offset;
  T* recv = static_cast<T*>(a.recv);
  {
    const Share sh = a.share[me];
    const Piece p = piece_of(sh.len, vec ? V : 1);
    copy_piece(static_cast<T*>(a.ws[me]) + sh.ws, send, p, vec);
    if (recv + sh.user != send) copy_piece(recv + sh.user, send, p, vec);
  }
  if (!device::barrier(a.sync, blockIdx.x == 0)) return;
  for (int s = 0; s < n; ++s) {
    if (s == me) continue;
    const Share sh = a.share[s];
    copy_piece(recv + sh.user, static_cast<const T*>(a.ws[s]) + sh.ws, piece_of(sh.len, vec ? V : 1), vec);
  }
  device::barrier(a.sync);
}

// Broadcast: the root copies in, meet, the others copy out, meet.
template <class Io, class T = typename Io::T>
__global__ void __launch_bounds__(kThreads) broadcast_kernel(CollectiveStep a, bool vec) {
  constexpr int V = 16 / sizeof(T);
  const Share sh = a.share[0];
  const Piece p = piece_of(sh.len, vec ? V : 1);
  T* buffer = static_cast<T*>(a.recv) + sh.user;
  if (a.sync.rank == a.root) copy_piece(static_cast<T*>(a.ws[a.root]) + sh.ws, buffer, p, vec);
  if (!device::barrier(a.sync, blockIdx.x == 0)) return;
  if (a.sync.rank != a.root) copy_piece(buffer, static_cast<const T*>(a.ws[a.root]) + sh.ws, p, vec);
  device::barrier(a.sync);
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// Whether every pointer and share offset allows 16-byte vectors of `element`-byte elements.
bool vectorisable(const CollectiveStep& s, size_t element, std::initializer_list<size_t> extra_offsets) {
  const size_t V = 16 / element;
  if ((s.send && !aligned(s.send)) || !aligned(s.recv)) return false;
  for (int r = 0; r < s.sync.size; ++r) {
    if (!aligned(s.ws[r]) || s.share[r].user % V != 0 || s.share[r].ws % V != 0) return false;
  }
  for (size_t o : extra_offsets)
    if (o % V != 0) return false;
  return true;
}

template <class F>
cudaError_t by_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(device::F32Io{});
    case DType::bf16: return f(device::Bf16Io{});
    case DType::f16: return f(device::F16Io{});
    default: return cudaErrorInvalidValue;
  }
}

template <class F>
cudaError_t by_op(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::sum: return f(std::integral_constant<ReduceOp, ReduceOp::sum>{});
    case ReduceOp::max: return f(std::integral_constant<ReduceOp, ReduceOp::max>{});
    case ReduceOp::min: return f(std::integral_constant<ReduceOp, ReduceOp::min>{});
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_all_reduce(const CollectiveStep& step, DType dtype, ReduceOp op, DeviceAlgo algo,
                              cudaStream_t stream) {
  const bool vec = vectorisable(step, dtype_size(dtype), {});
  return by_dtype(dtype, [&](auto io) {
    using Io = decltype(io);
    return by_op(op, [&](auto o) {
      constexpr ReduceOp Op = decltype(o)::value;
      if (algo == DeviceAlgo::one_shot)
        all_reduce_one_shot<Io, Op><<<step.blocks, kThreads, 0, stream>>>(step, vec);
      else
        all_reduce_two_shot<Io, Op><<<step.blocks, kThreads, 0, stream>>>(step, vec);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_reduce_scatter(const CollectiveStep& step, DType dtype, ReduceOp op, size_t recv_offset,
                                  cudaStream_t stream) {
  const bool vec = vectorisable(step, dtype_size(dtype), {recv_offset});
  return by_dtype(dtype, [&](auto io) {
    using Io = decltype(io);
    return by_op(op, [&](auto o) {
      reduce_scatter_kernel<Io, decltype(o)::value><<<step.blocks, kThreads, 0, stream>>>(step, recv_offset, vec);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_all_gather(const CollectiveStep& step, DType dtype, size_t send_offset, cudaStream_t stream) {
  const bool vec = vectorisable(step, dtype_size(dtype), {send_offset});
  return by_dtype(dtype, [&](auto io) {
    using Io = decltype(io);
    all_gather_kernel<Io><<<step.blocks, kThreads, 0, stream>>>(step, send_offset, vec);
    return cudaGetLastError();
  });
}

cudaError_t launch_broadcast(const CollectiveStep& step, DType dtype, cudaStream_t stream) {
  const bool vec = vectorisable(step, dtype_size(dtype), {});
  return by_dtype(dtype, [&](auto io) {
    using Io = decltype(io);
    broadcast_kernel<Io><<<step.blocks, kThreads, 0, stream>>>(step, vec);
    return cudaGetLastError();
  });
}

}  // namespace seam::kernels::cuda
