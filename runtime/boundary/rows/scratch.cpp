#include "runtime/boundary/rows/scratch.h"

namespace seam::boundary::rows {

Tensor Scratch::get(const Tensor& like, int64_t rows) {
  ++uses_;
  const size_t bytes = static_cast<size_t>(rows * like.cols) * dtype_size(like.dtype);
  if (!storage_.fits(bytes, like.device)) storage_ = residual::Storage(bytes + bytes / 2, like.device);
  return Tensor::contiguous(storage_.data(), like.dtype, rows, like.cols, like.device);
}

}  // namespace seam::boundary::rows
