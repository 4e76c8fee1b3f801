#include "seam/tensor.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace seam {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

/// `length` bytes (whole huge pages) mapped at a 2 MiB boundary and advised onto huge pages
/// before anything touches them: memory from malloc may have been touched already, and its
/// pages stay small. A kernel without them (or with THP off) keeps base pages, which only
/// costs speed.
void* map_huge(size_t length) {
  void* raw =
      mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  char* begin = static_cast<char*>(raw);
  char* aligned = begin + (kHugePage - reinterpret_cast<uintptr_t>(begin) % kHugePage) % kHugePage;
  if (aligned > begin) munmap(begin, aligned - begin);
  if (char* end = begin + length + kHugePage; end > aligned + length)
    munmap(aligned + length, end - (aligned + length));
  madvise(aligned, length, MADV_HUGEPAGE);
  return aligned;
}

}  // namespace

Buffer::Buffer(size_t bytes, Pages pages) : bytes_(bytes) {
  if (bytes == 0) return;
  if (pages == Pages::huge) {
    const size_t length = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    ptr_ = std::unique_ptr<void, Free>(map_huge(length), Free{length});
  } else {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    ptr_ = std::unique_ptr<void, Free>(p, Free{0});
  }
  // Zero pages already, but touched here so that their faults (and huge pages) come now, not
  // in the first collective.
  std::memset(ptr_.get(), 0, bytes);
}

void Buffer::Free::operator()(void* p) const {
  if (mapped)
    munmap(p, mapped);
  else
    std::free(p);
}

Tensor Buffer::as_tensor(DType dtype, int64_t rows, int64_t cols) const {
  if (static_cast<size_t>(rows * cols) * dtype_size(dtype) > bytes_)
    throw std::length_error("Buffer::as_tensor: view larger than the buffer");
  return Tensor::contiguous(data(), dtype, rows, cols);
}

}  // namespace seam
