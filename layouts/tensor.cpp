#include "layouts/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace seam {

Buffer::Buffer(size_t bytes, Pages pages) : bytes_(bytes) {
  if (bytes == 0) return;
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t alignment = pages == Pages::huge ? kHugePage : 64;
  const size_t allocated = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, allocated);
  if (!p) throw std::bad_alloc();
  // Advised before the first touch, so that the memset below faults huge pages in; a kernel
  // without them (or with THP off) keeps base pages, which only costs speed.
  if (pages == Pages::huge) madvise(p, allocated, MADV_HUGEPAGE);
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
