// Where a group's ranks run when it spans hosts: how many hosts, ranks per host, and the two
// views the two-level (hierarchical) schedules take of it: the ranks of this rank's host (shared
// memory) and, one per host, the ranks with this rank's place on theirs (the network).
#pragma once

#include <span>
#include <vector>

namespace seam::collectives {

struct HostLayout {
  int hosts = 1;
  /// Ranks per host when every host has as many, else 0.
  int per_host = 0;
  /// Ranks on the host with the fewest.
  int fewest = 0;
  /// Group ranks host by host, each host's in rank order: host h's are entries
  /// [h * per_host, (h + 1) * per_host) when hosts hold as many.
  std::vector<int> ranks_by_host;
  /// Host h holds group ranks [h * per_host, (h + 1) * per_host) (mpirun's and torchrun's
  /// default placement): ranks_by_host is the identity.
  bool host_major = false;
  /// Group ranks on this rank's host, in rank order; this rank's place among them.
  std::vector<int> local;
  int local_index = 0;
  /// Group ranks with this rank's place on their host, one per host in host order (none when
  /// this rank's place is past the fewest ranks of a host); this rank's host's place among them.
  std::vector<int> cross;
  int host_index = 0;
  /// Whether the two-level reduce-scatters and gathers apply: two hosts or more, as many ranks
  /// on each, two or more.
  bool two_level() const { return hosts > 1 && per_host > 1; }
  /// Whether the two-level all-reduce applies: two hosts or more, one of them with two ranks or
  /// more (the first `fewest` ranks of every host cross the network).
  bool two_level_all_reduce() const { return hosts > 1 && (per_host > 1 || per_host == 0); }
};

/// The layout of a group whose rank r runs on host `host_of[r]` (any ids; hosts are numbered by
/// their lowest rank), seen by rank `me`.
HostLayout host_layout(std::span<const int> host_of, int me);

}  // namespace seam::collectives
