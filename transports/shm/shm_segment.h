// A named POSIX shared-memory segment mapped into this process: the shm transport's rings, the
// shared-memory collectives' regions and SharedHostMemory each live in one.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace seam::shm {

class SharedSegment {
 public:
  /// Creates (O_EXCL) a segment of `bytes`, reserving its memory up front (a full /dev/shm then
  /// fails here with a clear error rather than with SIGBUS later). Throws CommError.
  static std::unique_ptr<SharedSegment> create(const std::string& name, size_t bytes);
  /// Maps an existing segment, checking its size (0: all of it, whatever its size). Throws
  /// CommError.
  static std::unique_ptr<SharedSegment> open(const std::string& name, size_t bytes);
  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  const std::string& name() const { return name_; }
  /// Removes the name (the mapping stays valid); idempotent.
  void unlink();

 private:
  SharedSegment(std::string name, void* data, size_t bytes, bool owner)
      : name_(std::move(name)), data_(data), bytes_(bytes), owner_(owner) {}
  std::string name_;
  void* data_;
  size_t bytes_;
  bool owner_;
  bool unlinked_ = false;
};

/// Maps the pages of [data, data + bytes), inside a segment, into this process now rather than
/// at their first touch (a page fault each, in every process that touches them). The segment's
/// pages were reserved when it was created, so this changes no byte and raises no SIGBUS; a
/// peer may be writing there meanwhile.
void map_in(void* data, size_t bytes);

/// 64 random bits (std::random_device).
uint64_t random_token();
/// "/seam-<pid>-<token>-<what>": the name of a segment process `pid` creates.
std::string segment_name(pid_t pid, uint64_t token, const std::string& what);
/// A name no other job on this host uses: segment_name(this pid, random_token(), what).
std::string unique_segment_name(const std::string& what);

/// Removes this user's segments of process `pid` (named "/seam-<pid>-..."), unless its "alive"
/// marker is still locked (a live process of that number, e.g. in another pid namespace).
/// Returns how many names were removed. For a peer known to have died.
size_t remove_segments_of(pid_t pid);
/// The same for every process named in /dev/shm that no longer exists. Runs by itself before a
/// process creates its first segment, so that a crashed job's blocks go with the next job.
size_t remove_dead_segments();

}  // namespace seam::shm
