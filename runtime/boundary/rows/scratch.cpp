#include <cstdint>
#include "runtime/boundary/rows/scratch.h"

namespace seam::boundary::rows {

Tensor Scratch::get(DType dtype, int64_t rows, int64_t cols) {
  ++uses_;
  const size_t bytes = static_cast<size_t>(rows * cols) * dtype_size(dtype);
  if (bytes > buffer_.bytes()) buffer_ = Buffer(bytes + bytes / 2);
  return Tensor::contiguous(buffer_.data(), dtype, rows, cols);
}

}  // namespace seam::boundary::rows
