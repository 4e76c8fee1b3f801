#include "runtime/exec/task_frames.h"

#include <algorithm>
#include <array>
#include <new>
#include <utility>

#include "transports/shm/pool_allocator.h"

namespace seam::comm::detail {
namespace {

constexpr std::size_t kClassBytes = 64;
constexpr std::size_t kClasses = 64;  // frames up to 4032 bytes; larger ones: operator new
constexpr std::size_t kMostCached = 16;  // frames kept per class and thread
constexpr std::size_t kAlign = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

/// The free list of class `c`: frames of c * 64 bytes (class 0 holds none, it lends class 1's).
template <std::size_t C>
using Frames = seam::detail::FreeList<std::max<std::size_t>(C, 1) * kClassBytes, kAlign, kMostCached>;

struct ClassLists {
  void* (*get)();
  void (*put)(void*);
};

template <std::size_t... C>
constexpr std::array<ClassLists, sizeof...(C)> lists_of(std::index_sequence<C...>) {
  return {ClassLists{[] { return Frames<C>::mine().get(); }, [](void* p) { Frames<C>::mine().put(p); }}...};
}

constexpr auto kLists = lists_of(std::make_index_sequence<kClasses>{});

std::size_t class_of(std::size_t bytes) { return (bytes + kClassBytes - 1) / kClassBytes; }

}  // namespace

void* allocate_frame(std::size_t bytes) {
  const std::size_t c = class_of(bytes);
  return c < kClasses ? kLists[c].get() : ::operator new(bytes);
}

void free_frame(void* frame, std::size_t bytes) noexcept {
  const std::size_t c = class_of(bytes);
  if (c < kClasses)
    kLists[c].put(frame);
  else
    ::operator delete(frame);
}

}  // namespace seam::comm::detail
