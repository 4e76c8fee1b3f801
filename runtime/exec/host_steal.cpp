#include <cstdint>
#include "runtime/exec/host_steal.h"

#include <fstream>
#include <sstream>
#include <string>

namespace seam::comm {

std::optional<CpuTicks> cpu_ticks() {
  std::ifstream stat("/proc/stat");
  std::string line;
  if (!std::getline(stat, line) || line.rfind("cpu ", 0) != 0) return std::nullopt;
  // cpu user nice system idle iowait irq softirq steal guest guest_nice; guest time is already
  // counted in user and nice.
  std::istringstream fields(line.substr(4));
  CpuTicks t;
  uint64_t value = 0;
  for (int i = 0; i < 8 && fields >> value; ++i) {
    t.total += value;
    if (i == 7) t.steal = value;
  }
  return t;
}

std::optional<double> steal_share(const std::optional<CpuTicks>& before,
                                  const std::optional<CpuTicks>& after) {
  // Some hypervisors' steal counters step back: no share then, rather than a wrapped one.
  if (!before || !after || after->total <= before->total || after->steal < before->steal)
    return std::nullopt;
  return static_cast<double>(after->steal - before->steal) /
         static_cast<double>(after->total - before->total);
}

}  // namespace seam::comm
