// The collective algorithms' entry points. Each returns a Task (a non-blocking schedule) that
// the communicator drives; the algorithm is chosen by size and SEAM_ALGO / thresholds, and
// logged at debug level with the transport path.
//
// In-place calls follow NCCL's conventions: all_reduce has send == recv; reduce_scatter(v) has
// recv == send + the offset of this rank's block; all_gather(v) has send == recv + the offset of
// this rank's block; broadcast is always in place.
#pragma once

#include <cstddef>
#include <span>

#include "seam/dtype.h"
#include "runtime/collectives/group.h"
#include "runtime/exec/task.h"

namespace seam::collectives {

/// recv[i] = op over ranks of send[i], i < count. send == recv is in-place.
comm::Task all_reduce(Group& g, const void* send, void* recv, size_t count, DType dtype, ReduceOp op);
/// recv (recv_count elements) = rank's block of the reduction of send (size * recv_count).
comm::Task reduce_scatter(Group& g, const void* send, void* recv, size_t recv_count, DType dtype,
                          ReduceOp op);
/// As reduce_scatter with block r of counts[r] elements (zero allowed); send holds sum(counts).
comm::Task reduce_scatterv(Group& g, const void* send, void* recv, std::span<const size_t> counts,
                           DType dtype, ReduceOp op);
/// recv (size * send_count) = every rank's send in rank order.
comm::Task all_gather(Group& g, const void* send, void* recv, size_t send_count, DType dtype);
/// recv (sum(counts)) = every rank's send (counts[rank] elements) in rank order.
comm::Task all_gatherv(Group& g, const void* send, void* recv, std::span<const size_t> counts,
                       DType dtype);
/// buffer (count elements) on every rank = root's buffer.
comm::Task broadcast(Group& g, void* buffer, size_t count, DType dtype, int root);
/// recv (counts[rank] elements) = block `rank` of root's send (sum(counts)); send used on root only.
comm::Task scatterv(Group& g, const void* send, void* recv, std::span<const size_t> counts,
                    DType dtype, int root);
/// Returns once every rank has entered.
comm::Task barrier(Group& g);

}  // namespace seam::collectives
