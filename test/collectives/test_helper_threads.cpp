// The helper threads' jobs (every part once, exceptions back to the caller, jobs back to back)
// and Helpers' cuts of copies and folds.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/collectives/shm/helped.h"
#include "runtime/collectives/shm/helper_threads.h"

namespace seam::test {

namespace helper_threads = collectives::helper_threads;
using collectives::Helpers;

TEST_CASE("every part of a job runs once, on the caller and the helpers") {
  helper_threads::ensure(3);
  constexpr int kParts = 16;
  std::vector<std::atomic<int>> runs(kParts);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  helper_threads::run(kParts, [&](int part) {
    runs[part].fetch_add(1);
    {
      std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // time for the helpers to join
  });
  for (int part = 0; part < kParts; ++part) CHECK(runs[part].load() == 1);
  CHECK(threads.size() >= 2);
  CHECK(threads.count(std::this_thread::get_id()) == 1);
}

TEST_CASE("jobs back to back run each part once (a helper late from one job takes the next's)") {
  helper_threads::ensure(3);
  std::atomic<long> sum{0};
  long expected = 0;
  for (int job = 0; job < 3000; ++job) {
    const int parts = 1 + job % 7;
    helper_threads::run(parts, [&](int part) { sum.fetch_add(job * 8 + part); });
    for (int part = 0; part < parts; ++part) expected += job * 8 + part;
  }
  CHECK(sum.load() == expected);
}

TEST_CASE("a part's exception reaches the caller once every part has returned") {
  helper_threads::ensure(2);
  std::atomic<int> returned{0};
  CHECK_THROWS_WITH_AS(helper_threads::run(8,
                                [&](int part) {
                                  if (part == 3) throw std::runtime_error("part 3 failed");
                                  std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                  returned.fetch_add(1);
                                }),
                       "part 3 failed", std::runtime_error);
  CHECK(returned.load() == 7);
  std::atomic<int> again{0};
  helper_threads::run(4, [&](int) { again.fetch_add(1); });  // a job after a failed one runs
  CHECK(again.load() == 4);
}

TEST_CASE("a job started from inside a part runs on that part's thread") {
  helper_threads::ensure(2);
  std::atomic<int> inner{0};
  helper_threads::run(3, [&](int) {
    const auto thread = std::this_thread::get_id();
    helper_threads::run(4, [&](int) { inner.fetch_add(std::this_thread::get_id() == thread); });
  });
  CHECK(inner.load() == 12);
}

TEST_CASE("Helpers cut runs of chunks evenly: no piece takes the remainder") {
  const Helpers helpers(3);
  for (size_t units : {size_t{4}, size_t{7}, size_t{14}, size_t{19}}) {
    CAPTURE(units);
    std::mutex mutex;
    std::vector<size_t> sizes;
    helpers.split(units, 64 * 1024, [&](size_t begin, size_t end) {
      std::lock_guard lock(mutex);
      sizes.push_back(end - begin);
    });
    CHECK(std::accumulate(sizes.begin(), sizes.end(), size_t{0}) == units);
    CHECK(sizes.size() == 4u);
    CHECK(*std::max_element(sizes.begin(), sizes.end()) -
              *std::min_element(sizes.begin(), sizes.end()) <= 1);
  }
}

TEST_CASE("Helpers weigh an operation by the buffers it reads or writes, not by its result") {
  const Helpers helpers(1);
  auto parts = [&](size_t bytes, size_t ways) {
    std::atomic<int> count{0};
    helpers.split(bytes, 1, [&](size_t, size_t) { ++count; }, ways);
    return count.load();
  };
  // 8 ranks' shares of a 1 MiB slot: 128 KiB each, read from 8 buffers.
  CHECK(parts(Helpers::kHelpedBytes / 2, 1) == 1);
  CHECK(parts(Helpers::kHelpedBytes / 2, 8) == 2);
  CHECK(parts(Helpers::kHelpedBytes / 8 - 64, 8) == 1);
  // reduce() weighs by its sources (half the helped size: split from two sources, whole from one).
  std::vector<float> a(Helpers::kHelpedBytes / 8, 1.0f), b(a.size(), 2.0f), out(a.size());
  std::atomic<int> wrong{0};
  for (int sources : {1, 2}) {
    const void* from[] = {a.data(), b.data()};
    helpers.reduce(out.data(), std::span(from, sources), a.size(), DType::f32, ReduceOp::sum);
    for (float x : out) wrong += x != (sources == 1 ? 1.0f : 3.0f);
  }
  CHECK(wrong.load() == 0);
}

TEST_CASE("Helpers cut copies, batches of copies and folds at 64-byte multiples, covering all") {
  const Helpers helpers(2);
  for (size_t bytes : {size_t{0}, size_t{100}, Helpers::kHelpedBytes - 1, Helpers::kHelpedBytes,
                       Helpers::kHelpedBytes * 3 + 17}) {
    CAPTURE(bytes);
    std::vector<char> src(bytes), dst(bytes, 0);
    std::iota(src.begin(), src.end(), 0);
    std::mutex mutex;
    std::vector<std::pair<size_t, size_t>> pieces;
    helpers.split(bytes, 1, [&](size_t begin, size_t end) {
      std::lock_guard lock(mutex);
      pieces.emplace_back(begin, end);
    });
    std::sort(pieces.begin(), pieces.end());
    size_t covered = 0;
    for (auto [begin, end] : pieces) {
      CHECK(begin == covered);
      CHECK(begin % 64 == 0);
      covered = end;
    }
    CHECK(covered == bytes);
    CHECK(pieces.size() == (bytes >= Helpers::kHelpedBytes ? 3u : bytes ? 1u : 0u));
    helpers.copy(dst.data(), src.data(), bytes);
    CHECK(dst == src);
  }
  // Copies handed over together: split across their joint bytes, each landing whole.
  {
    const size_t sizes[] = {100, Helpers::kHelpedBytes, 7, Helpers::kHelpedBytes / 2 + 3};
    std::vector<std::vector<char>> from, to;
    std::vector<Helpers::Copy> copies;
    for (size_t bytes : sizes) {
      from.emplace_back(bytes);
      to.emplace_back(bytes, 0);
      std::iota(from.back().begin(), from.back().end(), char(bytes));
    }
    for (size_t i = 0; i < from.size(); ++i) copies.push_back({to[i].data(), from[i].data(), sizes[i]});
    helpers.copy(copies);
    CHECK(to == from);
  }
  // A fold of three sources, split three ways.
  constexpr size_t kCount = Helpers::kHelpedBytes;  // floats: 4x the helped size
  std::vector<float> a(kCount), b(kCount), c(kCount), out(kCount);
  for (size_t i = 0; i < kCount; ++i) a[i] = float(i % 97), b[i] = 1.0f, c[i] = float(i % 5);
  const void* sources[] = {a.data(), b.data(), c.data()};
  helpers.reduce(out.data(), sources, kCount, DType::f32, ReduceOp::sum);
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) wrong += out[i] != float(i % 97) + 1.0f + float(i % 5);
  CHECK(wrong == 0);
  // The same fold streamed to a destination off its line and kept in a buffer off it too, an odd
  // count: both hold the result, and neither a byte past it.
  const size_t count = kCount - 3;
  std::vector<float> streamed(count + 2, -1.0f), kept(count + 3, -1.0f);
  helpers.reduce_and_keep(streamed.data() + 1, kept.data() + 2, sources, count, DType::f32,
                          ReduceOp::sum);
  wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const float sum = float(i % 97) + 1.0f + float(i % 5);
    wrong += (streamed[1 + i] != sum) + (kept[2 + i] != sum);
  }
  CHECK(wrong == 0);
  CHECK(streamed.front() == -1.0f);
  CHECK(streamed.back() == -1.0f);
  CHECK(kept[1] == -1.0f);
  CHECK(kept.back() == -1.0f);
}

}  // namespace seam::test
