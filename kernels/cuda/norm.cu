#include "kernels/cuda/norm.h"

#include "kernels/cuda/norm_launch.cuh"

namespace seam::kernels::cuda {
namespace {

// One block per row (grid-strided): sum, normalise, store rounded or as FP8 with a per-token scale.
template <class Io, bool kFp8>
__global__ void norm_rows(device::RowArgs<Io> a, int64_t rows, typename Io::T* out, int64_t out_stride,
                          __nv_fp8_e4m3* q, int64_t q_stride, float* scales) {
  extern __shared__ float row[];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float inv = device::sum_row(a, r, row);
    device::normalise_row(a, inv, row);  // each thread keeps to its own columns: no barrier needed
    if constexpr (kFp8) {
      device::store_row_fp8<Io>(row, a.cols, q + r * q_stride, scales + r);
    } else {
      device::store_row<Io>(row, a.cols, out + r * out_stride);
    }
  }
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
  return launch::dispatch(x.dtype, [&](auto io) {
    using Io = decltype(io);
    auto kernel = norm_rows<Io, kFp8>;
    size_t shared = 0;
    if (const cudaError_t e = launch::reserve_row_memory(kernel, x.cols, &shared); e != cudaSuccess) return e;
    const auto a = launch::row_args<Io>(x, residual, extra, norm);
    const int blocks = static_cast<int>(std::min<int64_t>(x.rows, 65535));
    kernel<<<blocks, launch::threads_for(x.cols), shared, stream>>>(
        a, x.rows, kFp8 ? nullptr : static_cast<typename Io::T*>(out.data), out.row_stride,
        kFp8 ? static_cast<__nv_fp8_e4m3*>(out.data) : nullptr, out.row_stride, scales);
    return cudaGetLastError();
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

cudaError_t add_rms_norm_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra, const RmsNormSpec& norm,
                             const Fp8Rows& out, cudaStream_t stream) {
  return launch_norm<true>(x, &residual, extra, norm, out.values, out.scales, stream);
}

}  // namespace seam::kernels::cuda
