#include "runtime/collectives/host_layout.h"

#include <algorithm>

namespace seam::collectives {

HostLayout host_layout(std::span<const int> host_of, int me) {
  const int n = static_cast<int>(host_of.size());
  // Hosts by first appearance in rank order; by_host[h] lists host h's ranks.
  std::vector<int> host_ids;
  std::vector<std::vector<int>> by_host;
  for (int r = 0; r < n; ++r) {
    const int id = host_of[static_cast<size_t>(r)];
    auto it = std::find(host_ids.begin(), host_ids.end(), id);
    if (it == host_ids.end()) {
      host_ids.push_back(id);
      by_host.emplace_back();
      it = host_ids.end() - 1;
    }
    by_host[static_cast<size_t>(it - host_ids.begin())].push_back(r);
  }
  HostLayout layout;
  layout.hosts = static_cast<int>(by_host.size());
  const size_t per_host = by_host[0].size();
  bool uniform = true, host_major = true;
  size_t fewest = per_host;
  for (size_t h = 0; h < by_host.size(); ++h) {
    uniform &= by_host[h].size() == per_host;
    fewest = std::min(fewest, by_host[h].size());
    for (size_t j = 0; j < by_host[h].size(); ++j) {
      host_major &= by_host[h][j] == static_cast<int>(h * per_host + j);
      if (by_host[h][j] == me) {
        layout.host_index = static_cast<int>(h);
        layout.local_index = static_cast<int>(j);
      }
    }
  }
  layout.local = by_host[static_cast<size_t>(layout.host_index)];
  for (const auto& ranks : by_host) layout.ranks_by_host.insert(layout.ranks_by_host.end(), ranks.begin(), ranks.end());
  layout.fewest = static_cast<int>(fewest);
  if (layout.local_index < layout.fewest)
    for (const auto& ranks : by_host) layout.cross.push_back(ranks[static_cast<size_t>(layout.local_index)]);
  if (!uniform) return layout;
  layout.per_host = static_cast<int>(per_host);
  layout.host_major = host_major;
  return layout;
}

}  // namespace seam::collectives
