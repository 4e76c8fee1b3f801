// The algorithms behind collectives.h, as schedules over group-local blocks (element counts per
// rank). Public entry points select one by size; all_reduce composes the reduce-scatter and
// all-gather schedules. `collective` names the public call in error messages; `step` keeps the
// messages of one schedule apart from another's within the same call.
//
// In-place calls follow NCCL's conventions (every schedule below handles them): all_reduce has
// send == recv; reduce_scatter(v) has recv == send + the offset of this rank's block;
// all_gather(v) has send == recv + the offset of this rank's block; scatterv's root may pass
// recv == send + the offset of its own block; broadcast is always in place.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "seam/dtype.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/group.h"
#include "runtime/collectives/selection.h"
#include "runtime/exec/task.h"

namespace seam::collectives {

class RegionLease;

/// recv = op over ranks of send. Direct: every rank sends its whole buffer to every peer and
/// reduces the n buffers in rank order (one round, one rounding, the same bits on every rank).
comm::Task direct_all_reduce(Group& g, const char* send, char* recv, size_t count, DType dtype,
                             ReduceOp op);
/// Same result by a ring reduce-scatter of n near-equal blocks, then a ring all-gather of them.
comm::Task ring_all_reduce(Group& g, const char* send, char* recv, size_t count, DType dtype,
                           ReduceOp op);
/// Same result by recursive halving then doubling (halving.cpp): log2(p) exchanges each way
/// among p = the largest power of two <= n ranks, the others folded onto them first.
comm::Task halving_all_reduce(Group& g, const char* send, char* recv, size_t count, DType dtype,
                              ReduceOp op);
/// The message schedule `a` (direct, ring or halving) of an all-reduce.
comm::Task message_all_reduce(Algorithm a, Group& g, const char* send, char* recv, size_t count,
                              DType dtype, ReduceOp op);

/// Block r of op(all ranks' send) into out (counts[r] elements). Every rank sends each peer its
/// block; each rank reduces the n contributions to its block in rank order, rounding once.
comm::Task direct_reduce_scatter(Group& g, std::string_view collective, const char* send,
                                 char* out, std::vector<size_t> counts, DType dtype, ReduceOp op,
                                 uint32_t step);
/// Same result by a ring: n-1 rounds, each forwarding a partial sum to the right neighbour in
/// pipelined chunks (half types round each partial to the element type). With `ready`, block b of
/// send is read only once ready[b] is set (by a task run beside it that still writes send).
comm::Task ring_reduce_scatter(Group& g, std::string_view collective, const char* send, char* out,
                               std::vector<size_t> counts, DType dtype, ReduceOp op, uint32_t step,
                               const std::vector<char>* ready = nullptr);

/// The message schedule `a` (direct or ring) of a reduce-scatter.
comm::Task message_reduce_scatter(Algorithm a, Group& g, std::string_view collective,
                                  const char* send, char* out, std::vector<size_t> counts,
                                  DType dtype, ReduceOp op);

/// recv (blocks at their offsets) = every rank's send (counts[rank] elements); send may be this
/// rank's block inside recv. Direct: one round, each rank sends its block to every peer.
comm::Task direct_all_gather(Group& g, std::string_view collective, const char* send, char* recv,
                             std::vector<size_t> counts, DType dtype, uint32_t step);
/// Same result by a ring: each block travels n-1 hops in pipelined chunks.
comm::Task ring_all_gather(Group& g, std::string_view collective, const char* send, char* recv,
                           std::vector<size_t> counts, DType dtype, uint32_t step);

/// The message schedule `a` (direct or ring) of a gather.
comm::Task message_all_gather(Algorithm a, Group& g, std::string_view collective, const char* send,
                              char* recv, std::vector<size_t> counts, DType dtype);

/// Straight out of shared memory (shm/schedules.cpp; the group must be shm_capable()).
comm::Task shm_all_reduce(Group& g, const char* send, char* recv, size_t count, DType dtype,
                          ReduceOp op);
comm::Task shm_reduce_scatter(Group& g, std::string_view collective, const char* send, char* out,
                              Blocks counts, DType dtype, ReduceOp op);
comm::Task shm_all_gather(Group& g, std::string_view collective, const char* send, char* recv,
                          Blocks counts, DType dtype);
/// shm_all_gather on the region `held` holds (finished at the end); on one it acquires where
/// `held` is null.
comm::Task shm_all_gather_on(Group& g, RegionLease* held, std::string_view collective,
                             const char* send, char* recv, Blocks counts, DType dtype);
/// A broadcast through shared memory (shm/broadcast.cpp): small ones through the root's slot
/// without a wait for every rank, larger ones a gather of the root's block; where the ranks
/// outnumber their cores (small ones), or two ranks may not read each other's memory, as
/// messages (message_broadcast).
comm::Task shm_broadcast(Group& g, char* buffer, size_t count, DType dtype, int root);
/// A broadcast as a gather of the root's block alone, in place: this rank's (empty) block and
/// every rank's block counts.
struct RootBlockGather {
  char* own;
  std::vector<size_t> blocks;
};
inline RootBlockGather root_block_gather(const Group& g, char* buffer, size_t count, DType dtype,
                                         int root) {
  std::vector<size_t> blocks(static_cast<size_t>(g.size()), 0);
  blocks[static_cast<size_t>(root)] = count;
  return {buffer + (g.rank() > root ? count * dtype_size(dtype) : 0), std::move(blocks)};
}
/// The message schedule `a` of a broadcast (broadcast.cpp): direct, the root sends the whole
/// buffer to every rank; ring, a pipelined chain from the root. With `watch_marker` (where the
/// root may have taken shm_broadcast's gather instead), direct, and a peer that gets the root's
/// marker (kBroadcastMarkerStep) instead of its data fails with an aborting MismatchError.
comm::Task message_broadcast(Algorithm a, Group& g, char* buffer, size_t count,
                             size_t element_bytes, int root, bool watch_marker = false);
/// The step of the empty message with which the root of shm_broadcast's gather starts where
/// some ranks may send the broadcast as messages (their data goes at step 0). A control step
/// (Group::isend): it carries no call signature, so that ranks that also disagree on the dtype
/// still meet at the region's comparison of their calls.
constexpr uint32_t kBroadcastMarkerStep = 0x71;
/// Throws the aborting MismatchError of a rank that found the root of a broadcast took
/// `schedule` (messages, or the shared-memory gather) and itself the other: the ranks' counts
/// lie on both sides of the size that parts them, and the root may wait for this rank.
[[noreturn]] void throw_root_took_other_schedule(const Group& g, int root, std::string_view schedule);
/// Two-level, over hosts with as many ranks on each (hierarchical.cpp; selection.cpp says
/// which layouts each takes): the ranks of a host combine through shared memory, and only one
/// rank per host and block crosses the network.
comm::Task hierarchical_all_reduce(Group& g, const char* send, char* recv, size_t count,
                                   DType dtype, ReduceOp op);
comm::Task hierarchical_reduce_scatter(Group& g, std::string_view collective, const char* send,
                                       char* out, std::vector<size_t> counts, DType dtype,
                                       ReduceOp op);
comm::Task hierarchical_all_gather(Group& g, std::string_view collective, const char* send,
                                   char* recv, std::vector<size_t> counts, DType dtype);

/// How this process's last shared-memory collective moved its data ("slots", "slots-whole",
/// "single-copy", "zero-copy"; "" before the first): the perf binaries' algorithm column.
std::string_view last_shm_schedule();

}  // namespace seam::collectives
