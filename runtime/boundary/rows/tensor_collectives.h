// The runtime's collectives on row tensors over one of a rank's groups, recorded in the groups'
// Traffic. Rows are tokens and every collective moves whole rows: buffers must be contiguous and
// of one dtype. Each call is non-blocking (returns the Communicator's Work); on a group of one
// rank it completes at once (copying when out of place) and records nothing.
#pragma once

#include <cstdint>

#include <span>

#include "seam/tensor.h"
#include "runtime/boundary/rows/process_groups.h"
#include "seam/work.h"

namespace seam::boundary::rows {

/// inout := the sum over `group` of every rank's inout.
comm::Work all_reduce(ProcessGroups& groups, GroupKind group, const Tensor& inout);
/// recv (send.rows / size rows) := this rank's block of the sum over `group` of send.
comm::Work reduce_scatter(ProcessGroups& groups, GroupKind group, const Tensor& send, const Tensor& recv);
/// recv (rows[rank] rows) := this rank's block of the sum of send (sum(rows) rows); zero rows allowed.
comm::Work reduce_scatterv(ProcessGroups& groups, GroupKind group, const Tensor& send, const Tensor& recv,
                           std::span<const int64_t> rows);
/// recv (size * send.rows rows) := every rank's send, in group rank order.
comm::Work all_gather(ProcessGroups& groups, GroupKind group, const Tensor& send, const Tensor& recv);
/// recv (sum(rows) rows) := every rank's send (rows[rank] rows), in group rank order; zero rows allowed.
comm::Work all_gatherv(ProcessGroups& groups, GroupKind group, const Tensor& send, const Tensor& recv,
                       std::span<const int64_t> rows);

/// Throws ValueError unless t is contiguous (collectives move whole rows back to back).
void require_contiguous(const Tensor& t, const char* what);

}  // namespace seam::boundary::rows
