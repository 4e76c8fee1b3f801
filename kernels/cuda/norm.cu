#include "kernels/cuda/norm.h"

#include "kernels/cuda/norm_launch.cuh"

namespace seam::kernels::cuda {
namespace {

// One block per row (grid-strided): sum, normalise, store rounded or as FP8 with a per-token scale.
// kPacked: 16-byte accesses for the sum and the rounded store (the FP8 passes stay per element;
// sum_row_packed's closing block reduction makes its shared row visible to every thread).
template <class Io, bool kFp8, bool kPacked>
__global__ void norm_rows(device::RowArgs<Io> a, int64_t rows, typename Io::T* out, int64_t out_stride,
                          __nv_fp8_e4m3* q, int64_t q_stride, float* scales) {
  extern __shared__ float row[];
  device::wait_for_previous_kernel();
  device::let_next_kernel_launch();
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    device::norm_row<Io, kFp8, kPacked>(a, r, row, out, out_stride, q, q_stride, scales);
    __syncthreads();  // the next row rewrites the shared row
  }
}

// The row in registers (packed rows that fit, rounded output): many rows per SM in flight.
template <class Io, int K, bool kFp8>
__global__ void __launch_bounds__(device::max_register_threads(K)) norm_rows_registers(device::RowArgs<Io> a, int64_t rows, typename Io::T* out, int64_t out_stride,
                                    __nv_fp8_e4m3* q, int64_t q_stride, float* scales) {
  device::wait_for_previous_kernel();
  device::let_next_kernel_launch();
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    device::norm_row_registers<Io, K, kFp8>(a, r, kFp8 ? nullptr : out + r * out_stride,
                                            kFp8 ? q + r * q_stride : nullptr, kFp8 ? scales + r : nullptr);
}

template <bool kFp8>
cudaError_t launch_norm(const Tensor& x, const Tensor* residual, const Tensor* extra, const RmsNormSpec& norm,
                        const Tensor& out, float* scales, cudaStream_t stream) {
  launch::require_device(x, x, "the input");
  if (residual) launch::require_device(*residual, x, "the residual");
  if (extra) launch::require_device(*extra, x, "the extra addition");
  launch::require_device(out, x, "the output");
  if (out.dtype != (kFp8 ? DType::fp8_e4m3 : x.dtype)) throw TypeError("CUDA norm kernel: the output has another dtype");
  if (x.rows == 0 || x.cols == 0) return cudaSuccess;
  const bool packed = launch::packable({&x, residual, extra, kFp8 ? nullptr : &out}, x.cols);
  return launch::dispatch(x.dtype, [&](auto io) {
    using Io = decltype(io);
    int k = 0, register_threads = 0;
    if (packed && launch::register_shape(x.cols, device::kPack<Io>, x.rows, &k, &register_threads)) {
      const auto a = launch::row_args<Io>(x, residual, extra, norm);
      const int blocks = static_cast<int>(std::min<int64_t>(x.rows, 65535));
      return launch::dispatch_packs(k, [&](auto kc) {
        return launch::launch_rows(norm_rows_registers<Io, decltype(kc)::value, kFp8>, blocks, register_threads, 0,
                                   stream, a, x.rows, kFp8 ? nullptr : static_cast<typename Io::T*>(out.data),
                                   out.row_stride, kFp8 ? static_cast<__nv_fp8_e4m3*>(out.data) : nullptr,
                                   out.row_stride, scales);
      });
    }
    auto kernel = packed ? norm_rows<Io, kFp8, true> : norm_rows<Io, kFp8, false>;
    size_t shared = 0;
    if (const cudaError_t e = launch::reserve_row_memory(kernel, x.cols, &shared); e != cudaSuccess) return e;
    const auto a = launch::row_args<Io>(x, residual, extra, norm);
    const int blocks = static_cast<int>(std::min<int64_t>(x.rows, 65535));
    const int threads = launch::threads_for(x.cols, packed ? device::kPack<Io> : 1);
    return launch::launch_rows(kernel, blocks, threads, shared, stream, a, x.rows,
                               kFp8 ? nullptr : static_cast<typename Io::T*>(out.data), out.row_stride,
                               kFp8 ? static_cast<__nv_fp8_e4m3*>(out.data) : nullptr, out.row_stride, scales);
  });
}

}  // namespace

cudaError_t rms_norm(const Tensor& x, const RmsNormSpec& norm, const Tensor& out, cudaStream_t stream) {
  return launch_norm<false>(x, nullptr, nullptr, norm, out, nullptr, stream);
}

cudaError_t add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor* extra, const RmsNormSpec& norm,
                         const Tensor& out, cudaStream_t stream) {
  return launch_norm<false>(x, &residual, extra, norm, out, nullptr, stream);
}

cudaError_t rms_norm_fp8(const Tensor& x, const RmsNormSpec& norm, const Fp8Rows& out, cudaStream_t stream) {
  return launch_norm<true>(x, nullptr, nullptr, norm, out.values, out.scales, stream);
}

cudaError_t add_rms_norm_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra, const RmsNormSpec& norm,
                             const Fp8Rows& out, cudaStream_t stream) {
  return launch_norm<true>(x, &residual, extra, norm, out.values, out.scales, stream);
}

}  // namespace seam::kernels::cuda
