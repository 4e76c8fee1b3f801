// Which algorithm runs a call: by message size (SEAM_SMALL_MSG_BYTES), or forced by name
// (SEAM_ALGO); and the debug line every call logs.
#pragma once

#include <cstddef>
#include <string_view>

#include "seam/dtype.h"
#include "runtime/collectives/group.h"

namespace seam::collectives {

enum class Collective {
  all_reduce, reduce_scatter, reduce_scatterv, all_gather, all_gatherv, broadcast, scatterv,
  barrier
};

/// direct: every rank exchanges with every other in one round (latency; n-1 messages a rank).
/// ring: chunked, pipelined ring (bandwidth; 2 neighbours).
/// shm: straight out of a region every local rank maps (all ranks on the shm transport).
/// hierarchical: over hosts with as many ranks on each, the ranks of a host combine through
/// shared memory and one rank per host and block crosses the network (hierarchical.cpp).
/// halving: all-reduce by recursive halving and doubling (bandwidth of the ring in 2 log2(n)
/// messages; halving.cpp).
enum class Algorithm { direct, ring, shm, hierarchical, halving };

std::string_view collective_name(Collective c);
std::string_view algorithm_name(Algorithm a);

/// The algorithm a call of `ranks` ranks moving `bytes` (the whole buffer: all ranks' blocks)
/// gets over `transport`: shm when every rank is on the shm transport and the collective has a
/// shared-memory schedule; hierarchical when the ranks span hosts through "shm+ucx" and
/// `two_level` (they sit on the hosts as c's two-level schedule needs: for the all-reduce,
/// two ranks or more on some host; for the others, as many on each, two or more); else
/// message_algorithm. SEAM_ALGO=direct|ring|halving forces the message schedules (halving
/// for all-reduces, the others by size); =shm or =hierarchical leave the choice as it is (it
/// takes them wherever they apply); another name is a ValueError.
Algorithm choose_algorithm(Collective c, int ranks, size_t bytes, std::string_view transport,
                           bool two_level = false);
/// Between the message schedules for `ranks` ranks: direct up to SEAM_SMALL_MSG_BYTES, ring
/// above; for all-reduces of four ranks or more direct while each rank sends at most that much
/// in all (its buffer to every peer), halving up to 128 KiB, ring above; or the one SEAM_ALGO
/// names (halving: all-reduces only).
Algorithm message_algorithm(Collective c, size_t bytes, int ranks);
/// Whether SEAM_ALGO names a message schedule (direct, ring or halving), which keeps every call
/// off shared memory.
bool message_schedule_forced();

/// choose_algorithm for this group, logged at debug level with the count, dtype and transport,
/// and kept for last_algorithm.
Algorithm select_algorithm(Collective c, const Group& g, size_t bytes, size_t count, DType dtype);
/// The algorithm of this process's last collective call (the perf binaries' column).
Algorithm last_algorithm();
/// Records that the last call took `a` after all (a shared-memory broadcast sent as messages).
void note_algorithm(Algorithm a);

}  // namespace seam::collectives
