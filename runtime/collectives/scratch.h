// Temporary host buffers for algorithms (receive staging, partial sums), recycled between calls
// so that a collective does not pay page faults on fresh memory every time.
#pragma once

#include <cstddef>

#include "seam/tensor.h"

namespace seam::collectives {

/// At least `bytes` of 64-byte aligned memory, returned to a process-wide pool on destruction.
/// Its contents are unspecified.
class Scratch {
 public:
  explicit Scratch(size_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  char* data() const { return static_cast<char*>(buffer_.data()); }

 private:
  Buffer buffer_;
};

}  // namespace seam::collectives
