// An allocator for std::allocate_shared that keeps freed blocks of one size on a per-thread free
// list, so the per-operation objects of the hot path (requests, operation states) cost no malloc
// once warm. Blocks freed on another thread go to that thread's list; lists are bounded.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace seam::detail {

template <size_t Size, size_t Align, size_t MaxCached = 256>
class FreeList {
 public:
  void* get() {
    if (head_) {
      Node* n = head_;
      head_ = n->next;
      --count_;
      return n;
    }
    return ::operator new(Size, std::align_val_t(Align));
  }
  void put(void* p) {
    if (count_ >= MaxCached) {
      ::operator delete(p, std::align_val_t(Align));
      return;
    }
    Node* n = static_cast<Node*>(p);
    n->next = head_;
    head_ = n;
    ++count_;
  }
  /// The calling thread's list (trivially destructible: cached blocks of an exiting thread are
  /// simply not returned, at most MaxCached of them).
  static FreeList& mine() {
    static thread_local FreeList list __attribute__((tls_model("initial-exec")));
    return list;
  }

 private:
  struct Node {
    Node* next;
  };
  Node* head_ = nullptr;
  size_t count_ = 0;
};

template <class T>
struct PoolAllocator {
  using value_type = T;
  static constexpr size_t kAlign = std::max(alignof(T), alignof(void*));
  static constexpr size_t kSize = std::max(sizeof(T), sizeof(void*));
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kAlign)));
    return static_cast<T*>(FreeList<kSize, kAlign>::mine().get());
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n != 1) {
      ::operator delete(p, std::align_val_t(kAlign));
      return;
    }
    FreeList<kSize, kAlign>::mine().put(p);
  }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const noexcept { return true; }
};

/// std::make_shared through the pool.
template <class T, class... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
  return std::allocate_shared<T>(PoolAllocator<T>(), std::forward<Args>(args)...);
}

}  // namespace seam::detail
