#include "kernels/reduce/cache_size.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <string>

namespace seam::kernels {
namespace {

struct Cache {
  size_t bytes = 0;
  size_t sharing_cpus = 0;  ///< CPUs in its shared_cpu_list (0: unknown)
};

/// cpu0's cache of `level` (0: the highest listed; "32768K" -> 32 MiB), or none.
Cache read_sysfs(size_t wanted_level) {
  size_t best_level = 0;
  Cache found;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), size_file(dir + "/size");
    std::ifstream shared_file(dir + "/shared_cpu_list");
    size_t level = 0;
    std::string size, shared;
    if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
    size_t value = std::stoull(size);
    const char unit = size.back();
    value <<= unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    const bool wanted = wanted_level ? level == wanted_level : level >= best_level;
    if (!wanted || value == 0) continue;
    best_level = level;
    found = {value, shared_file >> shared ? cpus_in_list(shared) : 0};
  }
  return found;
}

}  // namespace

size_t cpus_in_list(std::string_view list) {
  size_t cpus = 0;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view range = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    const size_t dash = range.find('-');
    const std::string_view first_text = range.substr(0, dash);
    const std::string_view last_text =
        dash == std::string_view::npos ? first_text : range.substr(dash + 1);
    size_t first = 0, last = 0;
    const auto [first_end, first_error] =
        std::from_chars(first_text.data(), first_text.data() + first_text.size(), first);
    const auto [last_end, last_error] =
        std::from_chars(last_text.data(), last_text.data() + last_text.size(), last);
    if (first_error != std::errc{} || last_error != std::errc{} || range.empty() ||
        first_end != first_text.data() + first_text.size() ||
        last_end != last_text.data() + last_text.size() || last < first)
      return 0;
    cpus += last - first + 1;
  }
  return cpus;
}

size_t last_level_cache_bytes() {
  static const size_t bytes = [] {
    const Cache cache = read_sysfs(0);
    if (cache.bytes == 0) return size_t{32} << 20;
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const size_t cpus = cache.sharing_cpus ? cache.sharing_cpus : online > 0 ? online : 1;
    return std::min(cache.bytes, cpus * kLastLevelCacheBytesPerCpu);
  }();
  return bytes;
}

size_t l2_cache_bytes() {
  static const size_t bytes = [] {
    const Cache cache = read_sysfs(2);
    return cache.bytes ? cache.bytes : size_t{1} << 20;
  }();
  return bytes;
}

}  // namespace seam::kernels
