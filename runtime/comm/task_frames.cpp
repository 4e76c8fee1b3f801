#include "runtime/comm/task_frames.h"

#include <array>
#include <cstdint>
#include <new>

namespace seam::comm::detail {
namespace {

constexpr std::size_t kClassBytes = 64;
constexpr std::size_t kClasses = 64;      // frames under 4 KiB; larger ones go to operator new
constexpr std::uint32_t kMostCached = 16;  // frames kept per class and thread

/// One thread's cached frames; freed when the thread exits, after which its frames (a Task
/// run by another thread-local's destructor) go straight to operator new and delete.
struct FrameCache {
  struct Node {
    Node* next;
  };
  std::array<Node*, kClasses> head{};
  std::array<std::uint32_t, kClasses> count{};
  bool gone = false;
  ~FrameCache() {
    for (Node*& n : head)
      while (n) {
        Node* next = n->next;
        ::operator delete(n);
        n = next;
      }
    count.fill(0);
    gone = true;
  }
};

thread_local FrameCache cache;

std::size_t class_of(std::size_t bytes) { return (bytes + kClassBytes - 1) / kClassBytes; }

}  // namespace

void* allocate_frame(std::size_t bytes) {
  const std::size_t c = class_of(bytes);
  FrameCache& mine = cache;
  if (c >= kClasses || mine.gone) return ::operator new(c * kClassBytes);
  if (FrameCache::Node* n = mine.head[c]) {
    mine.head[c] = n->next;
    --mine.count[c];
    return n;
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
