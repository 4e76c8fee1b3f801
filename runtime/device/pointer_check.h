// Checks that a call's buffers are device memory of the communicator's GPU, with the allocation
// ranges already seen cached (the driver's lookup costs more than a small collective).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace seam::device {

class PointerCheck {
 public:
  explicit PointerCheck(int device) : device_(device) {}
  /// Throws ValueError when [p, p + bytes) is not inside one device allocation of this GPU
  /// (a host pointer, another GPU's memory, or past the allocation's end). `what` names it.
  void require_device(const void* p, size_t bytes, const char* op, const char* what);

 private:
  struct Range {
    uintptr_t end;
  };
  int device_;
  std::map<uintptr_t, Range> known_;  // base -> end, allocations of this device
};

}  // namespace seam::device
