// Tensor: a non-owning 2-D view (rows = tokens, cols = hidden) over host or CUDA memory;
// Buffer: owned, aligned host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "seam/dtype.h"
#include "seam/errors.h"

namespace seam {

/// Where a buffer lives. index is the CUDA ordinal for cuda, -1 for host memory.
struct Device {
  enum class Kind : uint8_t { cpu, cuda } kind = Kind::cpu;
  int index = -1;
  static Device cpu() { return {}; }
  static Device cuda(int ordinal) { return {Kind::cuda, ordinal}; }
  bool is_cuda() const { return kind == Kind::cuda; }
  bool operator==(const Device&) const = default;
};

/// Non-owning view of rows x cols elements; consecutive rows are row_stride elements apart.
/// The hidden dimension (cols) is never sharded by a boundary; rows are tokens.
struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  Device device{};
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;  ///< in elements; equals cols for a contiguous tensor

  static Tensor contiguous(void* data, DType dtype, int64_t rows, int64_t cols, Device device = {}) {
    return Tensor{data, dtype, device, rows, cols, cols};
  }
  bool is_contiguous() const { return row_stride == cols || rows <= 1; }
  int64_t numel() const { return rows * cols; }
  size_t row_bytes() const { return static_cast<size_t>(cols) * dtype_size(dtype); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  /// Pointer to the first element of row r.
  void* row(int64_t r) const {
    return static_cast<char*>(data) + static_cast<size_t>(r * row_stride) * dtype_size(dtype);
  }
  /// Rows [begin, begin + count) as a view. ValueError unless they lie within the tensor.
  Tensor slice_rows(int64_t begin, int64_t count) const {
    if (begin < 0 || count < 0 || begin > rows - count)
      throw ValueError("slice_rows: rows [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                       ") are outside a tensor of " + std::to_string(rows) + " rows");
    Tensor t = *this;
    t.data = count > 0 ? row(begin) : data;
    t.rows = count;
    return t;
  }
  bool empty() const { return rows == 0; }
};

/// How a Buffer's pages are backed: `huge` maps it onto transparent huge pages where the kernel
/// grants them (fewer pages for single-copy collectives to pin; README, the perf binaries' -H).
enum class Pages { base, huge };

/// Owned, zero-initialised host memory: 64-byte aligned, or with Pages::huge a mapping of its own
/// at a 2 MiB boundary.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes, Pages pages = Pages::base);
  void* data() const { return ptr_.get(); }
  size_t bytes() const { return bytes_; }
  /// View of the whole buffer as rows x cols of dtype (must fit).
  Tensor as_tensor(DType dtype, int64_t rows, int64_t cols) const;

 private:
  struct Free {
    size_t mapped;  // the length of a mapping of its own, or 0: from malloc
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> ptr_;
  size_t bytes_ = 0;
};

}  // namespace seam
