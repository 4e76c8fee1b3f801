// Device memory that other processes can map: a CUDA virtual-memory allocation whose physical
// handle is exported as a POSIX file descriptor (sent with FdChannel) and imported by peers on the
// same GPU or on a GPU with peer access. A mapping holds its physical memory alive until it is
// released, even after the exporting process exits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transports/cuda_peer/fd_channel.h"

namespace seam::transport::cuda_peer {

class VmmAllocation {
 public:
  VmmAllocation() = default;
  /// At least `bytes` on `device`, mapped read/write for it.
  static VmmAllocation create(int device, size_t bytes);
  /// Maps a peer's exported allocation of `bytes` (its bytes()) for `device`. Throws
  /// NotSupportedError when `device` cannot reach the memory (no peer access).
  static VmmAllocation import(const UniqueFd& fd, size_t bytes, int device);
  VmmAllocation(VmmAllocation&& o) noexcept { *this = std::move(o); }
  VmmAllocation& operator=(VmmAllocation&& o) noexcept;
  ~VmmAllocation();

  void* data() const { return reinterpret_cast<void*>(address_); }
  size_t bytes() const { return bytes_; }
  /// A new descriptor for the physical memory (the caller sends and closes it).
  UniqueFd export_fd() const;

 private:
  void release() noexcept;
  uint64_t handle_ = 0;   // CUmemGenericAllocationHandle
  uint64_t address_ = 0;  // CUdeviceptr
  size_t bytes_ = 0;
};

}  // namespace seam::transport::cuda_peer
