#include "runtime/comm/task_frames.h"

#include <array>
#include <cstdint>
#include <new>

namespace seam::comm::detail {
namespace {

constexpr std::size_t kClassBytes = 64;
constexpr std::size_t kClasses = 64;      // frames up to 4032 bytes; larger ones: operator new
constexpr std::uint32_t kMostCached = 16;  // frames kept per class and thread

/// One thread's cached frames. Trivially destructible, so that it stays usable to the end of
/// its thread (frames freed by static destructors, after the thread_locals'); the Reaper gives
/// its frames back at thread exit and turns it to operator new and delete from then on.
struct FrameCache {
  struct Node {
    Node* next;
  };
  std::array<Node*, kClasses> head{};
  std::array<std::uint32_t, kClasses> count{};
  bool gone = false;
};

thread_local FrameCache cache __attribute__((tls_model("initial-exec")));

/// Empties the thread's cache when the thread exits (a thread_local with a destructor, first
/// touched on the cache's slow path, so the fast path has no guard to check).
struct Reaper {
  ~Reaper() {
    for (FrameCache::Node*& n : cache.head)
      while (n) {
        FrameCache::Node* next = n->next;
        ::operator delete(n);
        n = next;
      }
    cache.count.fill(0);
    cache.gone = true;
  }
};

std::size_t class_of(std::size_t bytes) { return (bytes + kClassBytes - 1) / kClassBytes; }

}  // namespace

void* allocate_frame(std::size_t bytes) {
  const std::size_t c = class_of(bytes);
  FrameCache& mine = cache;
  if (c < kClasses && !mine.gone) {
    if (FrameCache::Node* n = mine.head[c]) {
      mine.head[c] = n->next;
      --mine.count[c];
      return n;
    }
    static thread_local Reaper reaper;  // registers the exit-time drain once per thread
    (void)reaper;
  }
  return ::operator new(c * kClassBytes);
}

void free_frame(void* frame, std::size_t bytes) noexcept {
  const std::size_t c = class_of(bytes);
  FrameCache& mine = cache;
  if (c >= kClasses || mine.gone || mine.count[c] >= kMostCached) {
    ::operator delete(frame);
    return;
  }
  auto* n = static_cast<FrameCache::Node*>(frame);
  n->next = mine.head[c];
  mine.head[c] = n;
  ++mine.count[c];
}

}  // namespace seam::comm::detail
