// Where the coroutine frames of Tasks come from: per-thread free lists (seam::detail::FreeList)
// by 64-byte size class, 16 frames a class at most (an exiting thread's are not returned). A
// collective call makes one to three frames, and some are past the sizes malloc caches per
// thread (a 2-rank 4 KiB all-gather's schedule takes 1232 bytes), so malloc's slower paths would
// weigh on every small call.
#pragma once

#include <cstddef>

namespace seam::comm::detail {

/// Storage for a frame of `bytes`; give it back with free_frame and the same `bytes`.
void* allocate_frame(std::size_t bytes);
/// Returns a frame allocate_frame gave out, on any thread.
void free_frame(void* frame, std::size_t bytes) noexcept;

}  // namespace seam::comm::detail
