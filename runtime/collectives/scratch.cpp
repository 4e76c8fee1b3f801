#include "runtime/collectives/scratch.h"

#include <mutex>
#include <utility>
#include <vector>

namespace seam::collectives {
namespace {

// Enough for the buffers of a few overlapping collectives; more are freed.
constexpr size_t kPooledBuffers = 8;

struct Pool {
  std::mutex mutex;
  std::vector<Buffer> free;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

Scratch::Scratch(size_t bytes) {
  if (bytes == 0) return;
  {
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    // The smallest pooled buffer that fits.
    auto best = p.free.end();
    for (auto it = p.free.begin(); it != p.free.end(); ++it)
      if (it->bytes() >= bytes && (best == p.free.end() || it->bytes() < best->bytes())) best = it;
    if (best != p.free.end()) {
      buffer_ = std::move(*best);
      p.free.erase(best);
      return;
    }
  }
  buffer_ = Buffer(bytes);
}

Scratch::~Scratch() {
  if (buffer_.bytes() == 0) return;
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  if (p.free.size() == kPooledBuffers) {
    // Keep the largest buffers: dropping the smallest frees the least useful one.
    auto smallest = p.free.begin();
    for (auto it = p.free.begin(); it != p.free.end(); ++it)
      if (it->bytes() < smallest->bytes()) smallest = it;
    if (smallest->bytes() >= buffer_.bytes()) return;
    p.free.erase(smallest);
  }
  p.free.push_back(std::move(buffer_));
}

}  // namespace seam::collectives
