// Coroutine frames from per-thread free lists (task_frames.h): a frame given back is given out
// again for a frame of its 64-byte class, most recent first; other classes, and more frames than
// a class keeps, come from operator new.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/exec/task.h"
#include "runtime/exec/task_frames.h"

namespace seam::test {

using comm::detail::allocate_frame;
using comm::detail::free_frame;

TEST_CASE("a frame given back serves the next frame of its 64-byte class") {
  void* first = allocate_frame(200);  // class 4: 193-256 bytes
  std::memset(first, 0xab, 256);      // the whole class is usable
  free_frame(first, 200);
  void* second = allocate_frame(250);
  CHECK(second == first);
  void* other_class = allocate_frame(120);  // class 2
  CHECK(other_class != first);
  free_frame(other_class, 120);
  free_frame(second, 250);
}

TEST_CASE("a class keeps 16 frames, given out most recent first") {
  // Twenty frames empty the class's list (it held 16 at most); of the twenty given back, the
  // first 16 are kept and the last four go back to operator delete.
  std::vector<void*> frames;
  for (int i = 0; i < 20; ++i) frames.push_back(allocate_frame(1000));
  for (void* f : frames) free_frame(f, 1000);
  for (int i = 15; i >= 0; --i) CHECK(allocate_frame(1000) == frames[static_cast<size_t>(i)]);
  for (int i = 0; i < 16; ++i) free_frame(frames[static_cast<size_t>(i)], 1000);
}

TEST_CASE("frames of 4 KiB and more come from operator new and are usable") {
  void* big = allocate_frame(64 * 1024);
  std::memset(big, 0x5a, 64 * 1024);
  free_frame(big, 64 * 1024);
}

comm::Task counting(int& steps) {
  ++steps;
  co_return;
}

TEST_CASE("tasks run on pooled frames") {
  int steps = 0;
  for (int i = 0; i < 100; ++i) {
    comm::Task t = counting(steps);
    CHECK(t.step());
  }
  CHECK(steps == 100);
}

}  // namespace seam::test
