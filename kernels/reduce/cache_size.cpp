#include "kernels/reduce/cache_size.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "kernels/reduce/reduce.h"
#include "layouts/log.h"

namespace seam::kernels {
namespace {

/// Size in bytes of cpu0's cache of `level` (0: the highest listed; "32768K" → 32 MiB), or
/// `fallback`.
size_t read_sysfs(size_t wanted_level, size_t fallback) {
  size_t best_level = 0, bytes = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), size_file(dir + "/size");
    size_t level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
    size_t value = std::stoull(size);
    const char unit = size.back();
    value <<= unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    const bool wanted = wanted_level ? level == wanted_level : level >= best_level;
    if (wanted && value > 0) best_level = level, bytes = value;
  }
  return bytes ? bytes : fallback;
}

/// The fastest of three copies of kCopyProbeBytes with `store`, in microseconds.
double fastest_copy_us(char* dst, const char* src, Store store) {
  double best = 1e300;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    copy(dst, src, kCopyProbeBytes, store);
    best = std::min(
        best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                  .count());
  }
  return best;
}

/// Whether the caches hold a kCopyProbeBytes copy: cached stores then beat streaming ones, which
/// go to memory. Where they do not, the streaming stores' saving (no read of each destination
/// line) shows.
bool copy_probe_cached() {
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> src(static_cast<char*>(std::aligned_alloc(64, kCopyProbeBytes)));
  std::unique_ptr<char, Free> dst(static_cast<char*>(std::aligned_alloc(64, kCopyProbeBytes)));
  if (!src || !dst) return true;
  std::memset(src.get(), 1, kCopyProbeBytes);
  std::memset(dst.get(), 2, kCopyProbeBytes);
  double cached = 1e300, streaming = 1e300;
  for (int round = 0; round < 2; ++round) {  // alternated: the host's noise hits both
    cached = std::min(cached, fastest_copy_us(dst.get(), src.get(), Store::cached));
    streaming = std::min(streaming, fastest_copy_us(dst.get(), src.get(), Store::streaming));
  }
  const bool held = streaming >= 0.9 * cached;
  SEAM_LOG_DEBUG(
      "caches: an {} MiB copy took {:.0f} us with cached stores, {:.0f} streaming: {}",
      kCopyProbeBytes >> 20, cached, streaming,
      held ? "the last-level cache holds it" : "counting only that much last-level cache");
  return held;
}

}  // namespace

size_t usable_last_level_cache_bytes() {
  static const size_t bytes = copy_probe_cached()
                                  ? last_level_cache_bytes()
                                  : std::min(last_level_cache_bytes(), kCopyProbeBytes);
  return bytes;
}

size_t last_level_cache_bytes() {
  static const size_t bytes = read_sysfs(0, size_t{32} << 20);
  return bytes;
}

size_t l2_cache_bytes() {
  static const size_t bytes = read_sysfs(2, size_t{1} << 20);
  return bytes;
}

}  // namespace seam::kernels
