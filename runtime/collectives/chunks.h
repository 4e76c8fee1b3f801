// Iterating over a block in pipeline chunks.
#pragma once

#include <cstddef>

namespace seam::collectives {

/// One chunk: elements [first, first + count) of a block.
struct Chunk {
  size_t first;
  size_t count;
};

/// The chunks of a block of `count` elements, `chunk` at a time; one empty chunk when count is
/// 0, so that every link of a schedule carries a message whose size its receiver checks (a rank
/// that passed no elements while its peers passed some fails at once, not at its deadline).
class Chunks {
 public:
  Chunks(size_t count, size_t chunk) : count_(count), chunk_(chunk) {}
  struct Iterator {
    size_t first, count, chunk;
    Chunk operator*() const { return {first, count - first < chunk ? count - first : chunk}; }
    Iterator& operator++() {
      first += chunk;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return first < o.first; }
  };
  Iterator begin() const { return {0, count_, chunk_}; }
  Iterator end() const { return {count_ ? count_ : 1, count_, chunk_}; }

 private:
  size_t count_, chunk_;
};

}  // namespace seam::collectives
