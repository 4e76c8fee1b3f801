#include <cstdint>
#include "kernels/norm/elementwise.h"

#include <cstring>
#include <string>

#include "kernels/device/device_ops.h"
#include "kernels/norm/io_dtype.h"
#include "kernels/norm/norm_rows.h"

namespace seam::kernels {
namespace {

void require_like(const Tensor& t, const Tensor& like) {
  if (t.rows != like.rows || t.cols != like.cols || t.dtype != like.dtype)
    throw ValueError("element-wise kernel: operands differ in shape or dtype (" + std::to_string(t.rows) + "x" +
                     std::to_string(t.cols) + " vs " + std::to_string(like.rows) + "x" + std::to_string(like.cols) + ")");
}

}  // namespace

void add_inplace(const Tensor& dst, const Tensor& src) {
  require_like(src, dst);
  if (any_on_device({&dst, &src})) {
    require_same_device({&src}, dst, "add_inplace");
    return device_ops().add_inplace(dst, src);
  }
  detail::run_rows(dst.dtype, [&](auto io) {
    using Io = decltype(io);
    using T = typename Io::T;
    for (int64_t r = 0; r < dst.rows; ++r) {
      T* __restrict d = static_cast<T*>(dst.row(r));
      const T* __restrict s = static_cast<const T*>(src.row(r));
      for (int64_t c = 0; c < dst.cols; ++c) d[c] = Io::store(Io::load(d[c]) + Io::load(s[c]));
    }
  });
}

void copy(const Tensor& src, const Tensor& dst) {
  require_like(src, dst);
  if (src.data == dst.data && src.row_stride == dst.row_stride) return;
  if (any_on_device({&src, &dst})) return device_ops().copy(src, dst);
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memcpy(dst.data, src.data, src.bytes());
    return;
  }
  for (int64_t r = 0; r < src.rows; ++r) std::memcpy(dst.row(r), src.row(r), src.row_bytes());
}

void zero(const Tensor& t) {
  if (t.rows == 0) return;
  if (t.device.is_cuda()) return device_ops().zero(t);
  for (int64_t r = 0; r < t.rows; ++r) std::memset(t.row(r), 0, t.row_bytes());
}

void weighted_sum(std::span<const Tensor> srcs, std::span<const float> weights, const Tensor& dst) {
  if (srcs.size() != weights.size() || srcs.empty()) throw ValueError("weighted_sum: one weight per source");
  for (const Tensor& s : srcs) require_like(s, dst);
  for (const Tensor& s : srcs)
    if (any_on_device({&s, &dst})) throw NotSupportedError("weighted_sum (hyper-connections) runs on host memory only");
  dispatch_io(dst.dtype, [&](auto io) {
    using Io = decltype(io);
    using T = typename Io::T;
    for (int64_t r = 0; r < dst.rows; ++r) {
      T* d = static_cast<T*>(dst.row(r));
      for (int64_t c = 0; c < dst.cols; ++c) {
        float acc = 0.0f;
        for (size_t i = 0; i < srcs.size(); ++i) acc += weights[i] * Io::load(static_cast<const T*>(srcs[i].row(r))[c]);
        d[c] = Io::store(acc);
      }
    }
  });
}

}  // namespace seam::kernels
