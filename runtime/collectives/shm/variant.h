// How a shared-memory collective moves its data. The tuner (shm/tuner.h) chooses among the first
// three for calls on plain buffers (a reduce-scatter of uneven blocks takes slots-balanced for
// the slots); calls whose buffers lie in SharedHostMemory go zero-copy.
// Part of every call's signature, so ranks that disagree fail with a MismatchError instead of
// waiting for each other.
#pragma once

#include <cstdint>
#include <string_view>

namespace seam::collectives {

enum class ShmVariant : uint8_t {
  slots = 0,        ///< through the slots; reductions of all but small calls in shares
  single_copy = 1,  ///< the kernel reads and writes the peers' buffers (process_vm_readv/writev)
  slots_whole = 2,  ///< through the slots, every rank folding the whole buffer (all-reduce)
  zero_copy = 3,    ///< peers' SharedHostMemory buffers mapped and used in place
  slots_balanced = 4,  ///< through the slots, every rank folding an even share of all blocks
                       ///< (reduce-scatters of uneven blocks)
  slots_eager = 5,     ///< through the root's slot, no rank waiting for all (small broadcasts)
  single_copy_balanced = 6,  ///< single-copy, uneven blocks evened out between the ranks
};

/// "slots", "single-copy", "slots-whole", "zero-copy", "slots-balanced", "slots-eager" or
/// "single-copy-balanced"
/// (SEAM_SHM_SCHEDULE, the perf rows).
std::string_view shm_variant_name(ShmVariant variant);

}  // namespace seam::collectives
