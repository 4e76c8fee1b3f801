#include "runtime/collectives/shm/helped.h"

#include <algorithm>

#include "runtime/collectives/blocks.h"
#include "runtime/collectives/shm/helper_threads.h"
#include "runtime/collectives/shm/region.h"
#include "runtime/collectives/shm/steal_watch.h"

namespace seam::collectives {

namespace {

/// The region's helpers, unless they were chosen automatically and the host steals now
/// (steal_watch.h); SEAM_HELPER_THREADS keeps them whatever the host does.
int helpers_now(const ShmRegion& region) {
  const int threads = region.helper_threads();
  if (threads == 0 || !region.helpers_automatic()) return threads;
  return host_stealing() ? 0 : threads;
}

}  // namespace

Helpers::Helpers(const ShmRegion& region, size_t call_bytes)
    : Helpers(call_bytes >= kHelpedCallBytes ? helpers_now(region) : 0) {}

Helpers::Helpers(int threads) : threads_(threads) {
  if (threads_ <= 0) return;
  helper_threads::ensure(threads_);
  helper_threads::begin_call();
}

Helpers::~Helpers() {
  if (threads_ > 0) helper_threads::end_call();
}

void Helpers::split_across(size_t units, size_t unit_bytes,
                           const std::function<void(size_t, size_t)>& part) const {
  const int parts = static_cast<int>(std::min<size_t>(threads_ + 1, units));
  const size_t line = std::max<size_t>(1, 64 / unit_bytes);
  auto cut = [&](int i) { return i == parts ? units : units * i / parts / line * line; };
  helper_threads::run(parts, [&](int i) {
    if (cut(i) < cut(i + 1)) part(cut(i), cut(i + 1));
  });
}

void Helpers::split_pieces_across(std::span<const size_t> lengths, size_t total, size_t unit_bytes,
                                  const std::function<void(size_t, size_t, size_t)>& part) const {
  // Each cut of [0, total) takes its overlap with every piece's place in the sequence.
  split_across(total, unit_bytes, [&](size_t begin, size_t end) {
    size_t at = 0;
    for (size_t i = 0; i < lengths.size(); at += lengths[i], ++i) {
      const size_t from = std::max(begin, at), to = std::min(end, at + lengths[i]);
      if (from < to) part(i, from - at, to - at);
    }
  });
}

void Helpers::copy_across(void* dst, const void* src, size_t bytes, kernels::Store store) const {
  split_across(bytes, 1, [&](size_t begin, size_t end) {
    kernels::copy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                  end - begin, store);
  });
}

void Helpers::copy(std::span<const Copy> copies, kernels::Store store) const {
  if (threads_ == 0) {  // nothing to split: no per-call bookkeeping
    for (const Copy& c : copies) kernels::copy(c.dst, c.src, c.bytes, store);
    return;
  }
  Blocks bytes(copies.size());
  for (size_t i = 0; i < copies.size(); ++i) bytes[i] = copies[i].bytes;
  split_pieces(bytes, 1, [&](size_t i, size_t begin, size_t end) {
    kernels::copy(static_cast<char*>(copies[i].dst) + begin,
                  static_cast<const char*>(copies[i].src) + begin, end - begin, store);
  });
}

void Helpers::split_sources(std::span<const void* const> srcs, size_t count, size_t es,
                            const SourcesPart& part) const {
  split_across(count, es, [&](size_t begin, size_t end) {
    Sources from(srcs.size());
    for (size_t p = 0; p < srcs.size(); ++p)
      from[p] = static_cast<const char*>(srcs[p]) + begin * es;
    part(begin, end, from);
  });
}

void Helpers::reduce_across(void* dst, std::span<const void* const> srcs, size_t count, DType dtype,
                            ReduceOp op, kernels::Store store) const {
  const size_t es = dtype_size(dtype);
  split_sources(srcs, count, es, [&](size_t begin, size_t end, std::span<const void* const> from) {
    kernels::reduce(static_cast<char*>(dst) + begin * es, from, end - begin, dtype, op, store);
  });
}

void Helpers::reduce_and_keep_across(void* dst, void* kept, std::span<const void* const> srcs,
                                     size_t count, DType dtype, ReduceOp op) const {
  const size_t es = dtype_size(dtype);
  split_sources(srcs, count, es, [&](size_t begin, size_t end, std::span<const void* const> from) {
    kernels::reduce_and_keep(static_cast<char*>(dst) + begin * es,
                             static_cast<char*>(kept) + begin * es, from, end - begin, dtype, op);
  });
}

}  // namespace seam::collectives
