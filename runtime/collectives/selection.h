// Which algorithm runs a call: by message size (SEAM_SMALL_MSG_BYTES), or forced by name
// (SEAM_ALGO); and the debug line every call logs.
#pragma once

#include <cstddef>
#include <string_view>

#include "layouts/dtype.h"
#include "runtime/collectives/group.h"

namespace seam::collectives {

enum class Collective {
  all_reduce, reduce_scatter, reduce_scatterv, all_gather, all_gatherv, broadcast, scatterv,
  barrier
};

/// direct: every rank exchanges with every other in one round (latency; n-1 messages a rank).
/// ring: chunked, pipelined ring (bandwidth; 2 neighbours).
/// shm: straight out of a region every local rank maps (all ranks on the shm transport).
enum class Algorithm { direct, ring, shm };

std::string_view collective_name(Collective c);
std::string_view algorithm_name(Algorithm a);

/// The algorithm a call of `ranks` ranks moving `bytes` (the whole buffer: all ranks' blocks)
/// gets over `transport` (perf tools print it per row): shm when every rank is on the shm
/// transport and the collective has a shared-memory schedule, else direct up to
/// SEAM_SMALL_MSG_BYTES and ring above. SEAM_ALGO=direct|ring|shm forces one where it applies
/// (shm only where possible); another name is a ValueError.
Algorithm choose_algorithm(Collective c, int ranks, size_t bytes, std::string_view transport);

/// choose_algorithm for this group, logged at debug level with the count, dtype and transport.
Algorithm select_algorithm(Collective c, const Group& g, size_t bytes, size_t count, DType dtype);

}  // namespace seam::collectives
