#include "kernels/reduce/cache_size.h"

#include <fstream>
#include <string>

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

}  // namespace

size_t last_level_cache_bytes() {
  static const size_t bytes = read_sysfs(0, size_t{32} << 20);
  return bytes;
}

size_t l2_cache_bytes() {
  static const size_t bytes = read_sysfs(2, size_t{1} << 20);
  return bytes;
}

}  // namespace seam::kernels
