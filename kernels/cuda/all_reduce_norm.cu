#include "kernels/cuda/all_reduce_norm.h"

#include "kernels/cuda/norm_launch.cuh"

namespace seam::kernels::cuda {
namespace {

// Flag accesses at system scope (peer GPUs): a release store publishes everything this thread and,
// through the preceding __syncthreads, its block did before; an acquire load makes the peer's
// published writes visible. Cheaper than a full __threadfence_system per barrier.
__device__ __forceinline__ void store_release(uint32_t* flag, uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
__device__ __forceinline__ uint32_t load_acquire(const uint32_t* flag) {
  uint32_t value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

// Block b of every rank meets block b of every peer: thread t tells peer t that this rank arrived
// (writing `epoch` into the peer's slot for this rank), then waits until peer t wrote `epoch` into
// this rank's slot for t.
__device__ void peer_barrier(const PeerBuffers& peers, bool at_end, uint32_t epoch) {
  __syncthreads();
  if (threadIdx.x < peers.world) {
    PeerSignal* peer = peers.signals[threadIdx.x];
    PeerSignal* self = peers.signals[peers.rank];
    store_release(at_end ? &peer->end[blockIdx.x][peers.rank] : &peer->start[blockIdx.x][peers.rank], epoch);
    const uint32_t* wait = at_end ? &self->end[blockIdx.x][threadIdx.x] : &self->start[blockIdx.x][threadIdx.x];
    while (load_acquire(wait) != epoch) {
    }
  }
  __syncthreads();
}

template <class Io, bool kPacked>
__global__ void one_shot_rows(device::RowArgs<Io> a, int64_t rows, typename Io::T* out, int64_t out_stride,
                              PeerBuffers peers, uint32_t epoch) {
  extern __shared__ float row[];
  peer_barrier(peers, false, epoch);  // every peer's partial is written
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    if constexpr (kPacked) {
      const float inv = device::sum_row_packed(a, r, row);
      device::store_normalised_packed(a, inv, row, out + r * out_stride);
    } else {
      const float inv = device::sum_row(a, r, row);
      device::normalise_row(a, inv, row);
      device::store_row<Io>(row, a.cols, out + r * out_stride);
    }
  }
  peer_barrier(peers, true, epoch);  // no peer still reads this rank's partial
}

}  // namespace

cudaError_t one_shot_all_reduce_add_rms_norm(const PeerBuffers& peers, const Tensor& layout, const Tensor& residual,
                                             const RmsNormSpec& norm, const Tensor& out, uint32_t epoch,
                                             cudaStream_t stream) {
  if (peers.world < 1 || peers.world > kMaxPeers || peers.rank < 0 || peers.rank >= peers.world)
    throw ValueError("one-shot all-reduce: 1 to 8 peers, and this rank among them");
  launch::require_device(residual, layout, "the residual");
  launch::require_device(out, layout, "the output");
  if (residual.dtype != layout.dtype || out.dtype != layout.dtype)
    throw TypeError("one-shot all-reduce: partials, residual and output share one dtype");
  if (layout.rows == 0 || layout.cols == 0) return cudaSuccess;
  bool packed = launch::packable({&layout, &residual, &out}, layout.cols);
  for (int i = 0; i < peers.world; ++i) packed = packed && reinterpret_cast<uintptr_t>(peers.partials[i]) % 16 == 0;
  return launch::dispatch(layout.dtype, [&](auto io) {
    using Io = decltype(io);
    using T = typename Io::T;
    auto kernel = packed ? one_shot_rows<Io, true> : one_shot_rows<Io, false>;
    size_t shared = 0;
    if (const cudaError_t e = launch::reserve_row_memory(kernel, layout.cols, &shared); e != cudaSuccess) return e;
    auto a = launch::row_args<Io>(layout, &residual, nullptr, norm);
    for (int i = 0; i < peers.world; ++i) a.summands[i] = static_cast<const T*>(peers.partials[i]);
    a.k = peers.world;
    const int blocks = static_cast<int>(std::min<int64_t>(layout.rows, kMaxBarrierBlocks));
    kernel<<<blocks, launch::threads_for(layout.cols, packed ? device::kPack<Io> : 1), shared, stream>>>(
        a, layout.rows, static_cast<T*>(out.data), out.row_stride, peers, epoch);
    return cudaGetLastError();
  });
}

}  // namespace seam::kernels::cuda
