// Host memory that the other local ranks can map. Collectives whose buffers lie in it on every
// rank read and write the peers' buffers in place (zero-copy): nothing is staged through the
// shared slots and no kernel copy runs. Allocate long-lived buffers here (activations,
// workspaces) once and reuse them, as with NCCL's registered buffers.
#pragma once

#include <cstddef>
#include <memory>

namespace seam {

namespace shm {
class SharedSegment;
}

/// A block of host memory local peers can map (a POSIX shared-memory segment).
class SharedHostMemory {
 public:
  /// Allocates `bytes` (page-aligned, zero-filled, its pages reserved now). Not collective.
  /// Throws CommError when /dev/shm cannot hold it.
  static std::unique_ptr<SharedHostMemory> allocate(size_t bytes);
  /// Peers that mapped it unmap it when they next map a new block (or exit); the memory is
  /// released then.
  ~SharedHostMemory();
  SharedHostMemory(const SharedHostMemory&) = delete;
  SharedHostMemory& operator=(const SharedHostMemory&) = delete;

  void* data() const;
  size_t size() const;

 private:
  SharedHostMemory(std::unique_ptr<shm::SharedSegment> segment, size_t bytes);
  std::unique_ptr<shm::SharedSegment> segment_;
  size_t bytes_;
};

}  // namespace seam
