#include "layouts/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace seam {

Buffer::Buffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  ptr_.reset(p);
}

void Buffer::Free::operator()(void* p) const { std::free(p); }

Tensor Buffer::as_tensor(DType dtype, int64_t rows, int64_t cols) const {
  if (static_cast<size_t>(rows * cols) * dtype_size(dtype) > bytes_)
    throw std::length_error("Buffer::as_tensor: view larger than the buffer");
  return Tensor::contiguous(data(), dtype, rows, cols);
}

}  // namespace seam
