// A shared-memory call's copies and folds, split with the rank's helper threads (helper_threads.h)
// where the call is large and the region has helpers; otherwise run by the calling thread alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <span>

#include "kernels/reduce/reduce.h"
#include "seam/dtype.h"

namespace seam::collectives {

class ShmRegion;

/// The helpers of one call: none for calls below kHelpedCallBytes; operations below
/// kHelpedBytes run on the calling thread alone.
class Helpers {
 public:
  /// Waking helpers and handing them work has a fixed cost, and a sleeping vCPU is slow to wake:
  /// calls below this size never ask.
  static constexpr size_t kHelpedCallBytes = size_t{1} << 20;
  /// Operations below this size run whole on the calling thread.
  static constexpr size_t kHelpedBytes = 256 * 1024;

  /// The region's helpers when a call of `call_bytes` will use them, none while the host steals
  /// unless SEAM_HELPER_THREADS set them (steal_watch.h); helper_threads::begin_call until
  /// destroyed: construct it before the call's first wait.
  Helpers(const ShmRegion& region, size_t call_bytes);
  /// `threads` helpers, whatever the call's size.
  explicit Helpers(int threads);
  ~Helpers();
  Helpers(const Helpers&) = delete;
  Helpers& operator=(const Helpers&) = delete;

  /// part(begin, end) over units [0, units), each `unit_bytes`: whole, or cut into even pieces,
  /// one for this thread and one for each helper (cuts at 64-byte multiples of the units) where
  /// the bytes moved are kHelpedBytes or more. `ways`: the buffers each unit is read from or
  /// written to besides the first (a fold of n ranks' buffers or a copy to n ranks: n), since a
  /// fold's result is n times smaller than what it reads. Pieces run at the same time: `part`
  /// must allow that.
  template <class Part>
  void split(size_t units, size_t unit_bytes, Part&& part, size_t ways = 1) const {
    if (units == 0) return;
    if (!splits(units * unit_bytes * ways)) return part(size_t{0}, units);
    split_across(units, unit_bytes, part);
  }
  /// part(begin, end) over elements [0, count) in runs of whole chunks of `chunk` elements
  /// (`chunk_bytes` each, the last one shorter), cut as split() cuts them: each thread's run.
  template <class Part>
  void split_runs(size_t count, size_t chunk, size_t chunk_bytes, Part&& part,
                  size_t ways = 1) const {
    split(
        (count + chunk - 1) / chunk, chunk_bytes,
        [&](size_t first, size_t end) { part(first * chunk, std::min(count, end * chunk)); }, ways);
  }
  /// part(i, begin, end) over pieces of lengths[i] units each, taken as one sequence and cut as
  /// split() cuts it (one hand-off however many pieces): [begin, end) is within piece i.
  template <class Part>
  void split_pieces(std::span<const size_t> lengths, size_t unit_bytes, Part&& part,
                    size_t ways = 1) const {
    size_t total = 0;
    for (size_t length : lengths) total += length;
    if (splits(total * unit_bytes * ways))
      return split_pieces_across(lengths, total, unit_bytes, part);
    for (size_t i = 0; i < lengths.size(); ++i)
      if (lengths[i]) part(i, size_t{0}, lengths[i]);
  }
  /// kernels::copy, split.
  void copy(void* dst, const void* src, size_t bytes,
            kernels::Store store = kernels::Store::cached) const {
    if (!splits(bytes)) return kernels::copy(dst, src, bytes, store);
    copy_across(dst, src, bytes, store);
  }
  /// One copy of many: `bytes` from `src` to `dst` (trivial, so that arrays of them cost nothing
  /// to declare).
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  /// Every copy, their bytes split together (one hand-off for a phase's copies, however many).
  void copy(std::span<const Copy> copies, kernels::Store store = kernels::Store::cached) const;
  /// kernels::reduce, split (weighed by the bytes it reads from all `srcs`).
  void reduce(void* dst, std::span<const void* const> srcs, size_t count, DType dtype, ReduceOp op,
              kernels::Store store = kernels::Store::cached) const {
    if (!splits_fold(srcs, count, dtype))
      return kernels::reduce(dst, srcs, count, dtype, op, store);
    reduce_across(dst, srcs, count, dtype, op, store);
  }
  /// kernels::reduce_and_keep, split as reduce() is.
  void reduce_and_keep(void* dst, void* kept, std::span<const void* const> srcs, size_t count,
                       DType dtype, ReduceOp op) const {
    if (!splits_fold(srcs, count, dtype))
      return kernels::reduce_and_keep(dst, kept, srcs, count, dtype, op);
    reduce_and_keep_across(dst, kept, srcs, count, dtype, op);
  }

 private:
  // The split paths, out of line: the calls below kHelpedBytes (every call of a small
  // collective) go straight to the kernel, without building a std::function (its captures
  // outgrow its inline buffer: a malloc and a free per fold, about a tenth of a 1 KiB
  // reduce-scatter's instructions).
  void copy_across(void* dst, const void* src, size_t bytes, kernels::Store store) const;
  void reduce_across(void* dst, std::span<const void* const> srcs, size_t count, DType dtype,
                     ReduceOp op, kernels::Store store) const;
  void reduce_and_keep_across(void* dst, void* kept, std::span<const void* const> srcs,
                              size_t count, DType dtype, ReduceOp op) const;
  /// part(begin, end, sources at begin) over elements [0, count) of `srcs`, cut for the helpers.
  using SourcesPart =
      std::function<void(size_t begin, size_t end, std::span<const void* const> from)>;
  void split_sources(std::span<const void* const> srcs, size_t count, size_t es,
                     const SourcesPart& part) const;
  /// Whether an operation of `bytes` is cut for the helpers.
  bool splits(size_t bytes) const { return threads_ > 0 && bytes >= kHelpedBytes; }
  /// Whether a fold of `count` elements of every one of `srcs` is (weighed by what it reads).
  bool splits_fold(std::span<const void* const> srcs, size_t count, DType dtype) const {
    return splits(count * dtype_size(dtype) * srcs.size());
  }
  /// split() where it cuts.
  void split_across(size_t units, size_t unit_bytes,
                    const std::function<void(size_t, size_t)>& part) const;
  /// split_pieces() where it cuts.
  void split_pieces_across(std::span<const size_t> lengths, size_t total, size_t unit_bytes,
                           const std::function<void(size_t, size_t, size_t)>& part) const;

  int threads_ = 0;
};

}  // namespace seam::collectives
