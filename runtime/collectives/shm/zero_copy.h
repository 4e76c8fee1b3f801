// Zero-copy schedules: for calls whose buffers lie in SharedHostMemory on every rank, each rank
// maps its peers' buffers (once per allocation) and works on them in place. An all-reduce folds
// this rank's share of every rank's input and writes it into every rank's output; a
// reduce-scatter folds this rank's block out of every input (or, where the outputs are shared
// too, an even share of all blocks into their owners' outputs); an all-gather writes this rank's
// block into every output (or, where the inputs are shared too, an even share of the result). Each
// byte is read once and written where it belongs: no slots, no kernel copy. Two waits per call: the
// peers' buffers are announced, and all ranks are done.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "seam/dtype.h"
#include "runtime/collectives/group.h"
#include "runtime/collectives/shm/region.h"

namespace seam::collectives {

/// The handles (shm::shared_handle_of) this rank's buffers need for a zero-copy call; 0 when
/// they do not lie in SharedHostMemory.
struct ZeroCopyHandles {
  uint64_t send = 0;
  uint64_t recv = 0;
};

comm::Task zero_copy_all_reduce(Group& g, ShmRegion& region, const char* send, char* recv,
                                ZeroCopyHandles handles, size_t count, DType dtype, ReduceOp op);
/// Needs handles.send (peers read this rank's input); handles.recv, out's, where out lies in
/// SharedHostMemory (peers may then write into it).
comm::Task zero_copy_reduce_scatter(Group& g, ShmRegion& region, std::string_view collective,
                                    const char* send, char* out, ZeroCopyHandles handles,
                                    std::span<const size_t> counts, DType dtype, ReduceOp op);
/// Needs handles.recv (peers write into this rank's output); handles.send, where the input
/// lies in SharedHostMemory (peers may then read this rank's block from it).
comm::Task zero_copy_all_gather(Group& g, ShmRegion& region, std::string_view collective,
                                const char* send, char* recv, ZeroCopyHandles handles,
                                std::span<const size_t> counts, DType dtype);

}  // namespace seam::collectives
