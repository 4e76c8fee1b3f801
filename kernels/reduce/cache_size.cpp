#include "kernels/reduce/cache_size.h"

#include <fstream>
#include <string>

namespace seam::kernels {
namespace {

constexpr size_t kFallbackBytes = size_t{32} << 20;

/// Size in bytes of the highest-level cache listed for cpu0 ("32768K" → 32 MiB).
size_t read_sysfs() {
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
    if (level >= best_level && value > 0) best_level = level, bytes = value;
  }
  return bytes ? bytes : kFallbackBytes;
}

}  // namespace

size_t last_level_cache_bytes() {
  static const size_t bytes = read_sysfs();
  return bytes;
}

}  // namespace seam::kernels
