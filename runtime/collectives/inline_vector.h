// A fixed-size array that keeps up to N elements in itself and only larger ones on the heap:
// the per-call bookkeeping of the collectives (block offsets, reduction sources) without a
// malloc per call at the rank counts of one host, which would be a visible share of a small call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>

namespace seam::collectives {

template <class T, size_t N>
class InlineVector {
 public:
  InlineVector() : InlineVector(0) {}
  explicit InlineVector(size_t size, const T& value = T{}) : InlineVector(Unfilled{}, size) {
    std::fill(begin(), end(), value);
  }
  explicit InlineVector(std::span<const T> values) : InlineVector(Unfilled{}, values.size()) {
    std::copy(values.begin(), values.end(), begin());
  }
  InlineVector(const InlineVector& other) : InlineVector(Unfilled{}, other.size_) {
    std::copy(other.begin(), other.end(), begin());
  }
  InlineVector& operator=(const InlineVector& other) {
    if (this != &other) *this = InlineVector(other);
    return *this;
  }
  /// Leaves `other` empty.
  InlineVector(InlineVector&& other) noexcept
      : size_(other.size_), heap_(std::move(other.heap_)) {
    if (!heap_) std::copy(other.local_, other.local_ + size_, local_);
    other.size_ = 0;
  }
  InlineVector& operator=(InlineVector&& other) noexcept {
    if (this == &other) return *this;
    size_ = other.size_;
    heap_ = std::move(other.heap_);
    if (!heap_) std::copy(other.local_, other.local_ + size_, local_);
    other.size_ = 0;
    return *this;
  }

  size_t size() const { return size_; }
  T* data() { return heap_ ? heap_.get() : local_; }
  const T* data() const { return heap_ ? heap_.get() : local_; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  const T& back() const { return data()[size_ - 1]; }

 private:
  struct Unfilled {};
  /// Storage for `size` elements, written by the caller.
  InlineVector(Unfilled, size_t size)
      : size_(size), heap_(size > N ? std::make_unique_for_overwrite<T[]>(size) : nullptr) {}

  size_t size_;
  std::unique_ptr<T[]> heap_;
  T local_[N];
};

}  // namespace seam::collectives
