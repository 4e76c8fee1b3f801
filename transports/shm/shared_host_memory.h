// Host memory that the other local ranks can map. Collectives whose buffers lie in it on every
// rank read and write the peers' buffers in place (zero-copy): nothing is staged through the
// shared slots and no kernel copy runs. Allocate long-lived buffers here (activations,
// workspaces) once and reuse them, as with NCCL's registered buffers.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

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

namespace shm {

/// How a peer finds a range of this process's shared host memory: the allocation's number and
/// the offset in it, packed in one word (0: not in shared host memory).
uint64_t shared_handle_of(const void* data, size_t bytes);
/// A random number of this process that peers need, with its pid, to find its blocks.
uint64_t process_token();
/// The address, in this process, of the range `handle` names in process `pid` (whose
/// process_token() is `token`), mapping that
/// allocation on first use (and then unmapping the peers' blocks freed since). Throws
/// CommError when it cannot be mapped.
void* map_shared_handle(pid_t pid, uint64_t token, uint64_t handle);
/// How many peers' blocks this process has mapped (tests).
size_t mapped_peer_blocks();

}  // namespace shm
}  // namespace seam
