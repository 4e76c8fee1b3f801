// Single-copy schedules of the shared-memory collectives (shm/schedules.cpp chooses them per
// call): each rank reads the peers' buffers and writes into them through the kernel
// (process_vm_readv/_writev) instead of going through the slots.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "seam/dtype.h"
#include "runtime/collectives/group.h"
#include "runtime/collectives/shm/region.h"
#include "runtime/collectives/shm/variant.h"
#include "runtime/exec/task.h"

namespace seam::collectives {

/// Whether a single-copy reduce-scatter of these blocks folds even shares of all of them instead
/// of each rank its own block (single-copy-balanced, part of the call's signature).
bool single_copy_folds_even_shares(const ShmRegion& region, std::span<const size_t> counts);
/// Whether a single-copy gather of these blocks splits the larger of two uneven ones between its
/// owner and the peer (single-copy-balanced, part of the call's signature).
bool single_copy_splits_blocks(const ShmRegion& region, std::span<const size_t> counts);
/// The signature's variant of a single-copy call, `balanced` or not.
ShmVariant single_copy_variant(bool balanced);

/// All-reduce: every rank folds its even share of all ranks' inputs into its recv and writes it
/// into every peer's recv.
comm::Task single_copy_all_reduce(Group& g, RegionLease& region, const char* send, char* recv,
                                  size_t count, DType dtype, ReduceOp op, CallSignature signature);
/// Reduce-scatter(v): every rank folds its block (`balanced`: an even share of all blocks,
/// written into their owners' out) out of all ranks' send buffers.
comm::Task single_copy_reduce_scatter(Group& g, RegionLease& region, std::string_view collective,
                                      const char* send, char* out, std::span<const size_t> counts,
                                      DType dtype, ReduceOp op, bool balanced,
                                      CallSignature signature);
/// All-gather(v) and broadcast: every rank reads the peers' blocks into its recv, but for the
/// ends their owners write into it (two ranks' blocks, a broadcast root's last 1/n; `split`: two
/// uneven blocks, the larger one shared between its owner and the peer).
comm::Task single_copy_all_gather(Group& g, RegionLease& region, std::string_view collective,
                                  const char* send, char* recv, std::span<const size_t> counts,
                                  DType dtype, bool split, CallSignature signature);

}  // namespace seam::collectives
