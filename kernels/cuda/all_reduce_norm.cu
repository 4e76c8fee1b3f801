#include "kernels/cuda/all_reduce_norm.h"

#include "kernels/cuda/norm_launch.cuh"
#include "kernels/cuda/peer_sync.cuh"

namespace seam::kernels::cuda {
namespace {

/// Copies row r of the partial into this rank's workspace (rows cols apart).
template <class Io>
__device__ void copy_row_in(const typename Io::T* src, typename Io::T* dst, int64_t cols, bool packed) {
  if (packed) {
    constexpr int P = device::kPack<Io>;
    for (int64_t c = threadIdx.x * P; c < cols; c += static_cast<int64_t>(blockDim.x) * P)
      device::store_pack(dst + c, device::load_pack(src + c));
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = src[c];
  }
}

template <class Io, bool kFp8, bool kPacked>
__global__ void fused_rows(device::RowArgs<Io> a, const typename Io::T* partial, int64_t partial_stride,
                           typename Io::T* mine, int64_t rows, typename Io::T* out, int64_t out_stride,
                           __nv_fp8_e4m3* q, int64_t q_stride, float* scales, PeerSync sync) {
  extern __shared__ float row[];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    copy_row_in<Io>(partial + r * partial_stride, mine + r * a.cols, a.cols, kPacked);
  if (!device::barrier(sync, blockIdx.x == 0)) return;  // every rank's rows of this block are in
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    device::norm_row<Io, kFp8, kPacked>(a, r, row, out, out_stride, q, q_stride, scales);
    __syncthreads();  // the next row rewrites the shared row
  }
  device::barrier(sync);  // no peer still reads this rank's rows
}

// The same with the row in registers (packed rows that fit, rounded output), as norm.cu's.
template <class Io, int K, bool kFp8>
__global__ void __launch_bounds__(device::max_register_threads(K)) fused_rows_registers(device::RowArgs<Io> a, const typename Io::T* partial, int64_t partial_stride,
                                     typename Io::T* mine, int64_t rows, typename Io::T* out, int64_t out_stride,
                                     __nv_fp8_e4m3* q, int64_t q_stride, float* scales, PeerSync sync) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    copy_row_in<Io>(partial + r * partial_stride, mine + r * a.cols, a.cols, true);
  if (!device::barrier(sync, blockIdx.x == 0)) return;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    device::norm_row_registers<Io, K, kFp8>(a, r, kFp8 ? nullptr : out + r * out_stride,
                                            kFp8 ? q + r * q_stride : nullptr, kFp8 ? scales + r : nullptr);
  device::barrier(sync);
}

}  // namespace

cudaError_t all_reduce_add_rms_norm(const RowWorkspaces& ws, const PeerSync& sync, int blocks, const Tensor& partial,
                                    const Tensor& residual, const RmsNormSpec& norm, const Tensor* out,
                                    const Fp8Rows* fp8_out, int64_t shape_rows, cudaStream_t stream) {
  if (sync.size < 1 || sync.size > kMaxRanks || sync.rank < 0 || sync.rank >= sync.size)
    throw ValueError("fused all-reduce: 1 to 8 ranks, and this rank among them");
  const bool fp8 = fp8_out != nullptr;
  const Tensor& dst = fp8 ? fp8_out->values : *out;
  launch::require_device(partial, partial, "the partial");
  launch::require_device(residual, partial, "the residual");
  launch::require_device(dst, partial, "the output");
  if (residual.dtype != partial.dtype || (!fp8 && dst.dtype != partial.dtype))
    throw TypeError("fused all-reduce: partial, residual and output share one dtype");
  if (fp8 && dst.dtype != DType::fp8_e4m3) throw TypeError("fused all-reduce: the FP8 read's values are fp8_e4m3");
  if (partial.rows == 0 || partial.cols == 0) return cudaSuccess;
  bool packed = launch::packable({&partial, &residual, fp8 ? nullptr : &dst}, partial.cols);
  for (int i = 0; i < sync.size; ++i)
    packed = packed && reinterpret_cast<uintptr_t>(ws.ws[i]) % 16 == 0 && ws.offset * dtype_size(partial.dtype) % 16 == 0;
  return launch::dispatch(partial.dtype, [&](auto io) {
    using Io = decltype(io);
    using T = typename Io::T;
    // Every rank's copy of the rows in the workspace is a summand; this rank's own is `mine`.
    Tensor rows_view = partial;
    rows_view.row_stride = partial.cols;
    auto a = launch::row_args<Io>(rows_view, &residual, nullptr, norm);
    for (int i = 0; i < sync.size; ++i) a.summands[i] = static_cast<const T*>(ws.ws[i]) + ws.offset;
    a.k = sync.size;
    T* mine = static_cast<T*>(ws.ws[sync.rank]) + ws.offset;
    int k = 0, threads = 0;
    if (packed && launch::register_shape(partial.cols, device::kPack<Io>, shape_rows, &k, &threads)) {
      return launch::dispatch_packs(k, [&](auto kc) {
        constexpr int K = decltype(kc)::value;
        if (fp8)
          fused_rows_registers<Io, K, true><<<blocks, threads, 0, stream>>>(
              a, static_cast<const T*>(partial.data), partial.row_stride, mine, partial.rows, nullptr, 0,
              static_cast<__nv_fp8_e4m3*>(dst.data), dst.row_stride, fp8_out->scales, sync);
        else
          fused_rows_registers<Io, K, false><<<blocks, threads, 0, stream>>>(
              a, static_cast<const T*>(partial.data), partial.row_stride, mine, partial.rows, static_cast<T*>(dst.data),
              dst.row_stride, nullptr, 0, nullptr, sync);
        return cudaGetLastError();
      });
    }
    auto kernel = fp8 ? (packed ? fused_rows<Io, true, true> : fused_rows<Io, true, false>)
                      : (packed ? fused_rows<Io, false, true> : fused_rows<Io, false, false>);
    size_t shared = 0;
    if (const cudaError_t e = launch::reserve_row_memory(kernel, partial.cols, &shared); e != cudaSuccess) return e;
    kernel<<<blocks, launch::threads_for(partial.cols, packed ? device::kPack<Io> : 1), shared, stream>>>(
        a, static_cast<const T*>(partial.data), partial.row_stride, mine, partial.rows,
        fp8 ? nullptr : static_cast<T*>(dst.data), dst.row_stride,
        fp8 ? static_cast<__nv_fp8_e4m3*>(dst.data) : nullptr, dst.row_stride, fp8 ? fp8_out->scales : nullptr, sync);
    return cudaGetLastError();
  });
}

}  // namespace seam::kernels::cuda
