#include "kernels/cuda/elementwise.h"

#include <algorithm>

#include "kernels/cuda/norm_launch.cuh"

namespace seam::kernels::cuda {
namespace {

// Grid-strided over rows (blockIdx.y) and columns: element-wise, so any order gives the same bits.
template <class Io>
__global__ void add_rows(typename Io::T* dst, int64_t dst_stride, const typename Io::T* src, int64_t src_stride,
                         int64_t rows, int64_t cols) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    typename Io::T* d = dst + r * dst_stride;
    const typename Io::T* s = src + r * src_stride;
    for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < cols;
         c += static_cast<int64_t>(gridDim.x) * blockDim.x)
      d[c] = Io::store(Io::load(d[c]) + Io::load(s[c]));
  }
}

}  // namespace

cudaError_t add_inplace(const Tensor& dst, const Tensor& src, cudaStream_t stream) {
  if (dst.rows != src.rows || dst.cols != src.cols || dst.dtype != src.dtype)
    throw ValueError("CUDA add_inplace: operands differ in shape or dtype");
  if (dst.rows == 0 || dst.cols == 0) return cudaSuccess;
  return launch::dispatch(dst.dtype, [&](auto io) {
    using Io = decltype(io);
    using T = typename Io::T;
    constexpr int kThreads = 256;
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>((dst.cols + kThreads - 1) / kThreads, 64)),
                    static_cast<unsigned>(std::min<int64_t>(dst.rows, 65535)));
    add_rows<Io><<<grid, kThreads, 0, stream>>>(static_cast<T*>(dst.data), dst.row_stride,
                                                static_cast<const T*>(src.data), src.row_stride, dst.rows, dst.cols);
    return cudaGetLastError();
  });
}

}  // namespace seam::kernels::cuda
