#include "runtime/boundary/rows/tensor_collectives.h"

#include <cstdint>

#include <numeric>
#include <string>
#include <vector>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"

namespace seam::boundary::rows {

void require_contiguous(const Tensor& t, const char* what) {
  if (!t.is_contiguous()) throw ValueError(std::string("row move: ") + what + " must be a contiguous tensor");
}

namespace {

void require_same_kind(const Tensor& a, const Tensor& b, const char* op) {
  require_contiguous(a, op);
  require_contiguous(b, op);
  if (a.dtype != b.dtype || a.cols != b.cols)
    throw ValueError(std::string("row move: ") + op + " buffers differ in dtype or hidden size");
}

void require_rows(const Tensor& t, int64_t rows, const char* op) {
  if (t.rows != rows)
    throw ValueError(std::string("row move: ") + op + " expects " + std::to_string(rows) + " rows, got " +
                     std::to_string(t.rows));
}

// The device collectives of `group` for device tensors (their path is chosen by Tensor::device).
DeviceGroup& device_group(ProcessGroups& groups, GroupKind group, const Tensor& t, const Tensor* other) {
  if (other && !(other->device == t.device))
    throw ValueError("row move: one buffer is in CUDA memory and the other is not");
  DeviceGroup* d = groups.device_group(group);
  if (!d)
    throw NotSupportedError("row move: device tensors on the " + std::string(group_kind_name(group)) +
                            " group need seam::cuda attached to the process groups (seam::device::BoundaryDevice::attach)");
  return *d;
}

bool on_device(const Tensor& a, const Tensor& b) { return a.device.is_cuda() || b.device.is_cuda(); }

// The per-rank element counts of a v-collective over whole rows: one row count per rank of the
// group, the full side (`full`: the reduce-scatter's send, the gather's receive) holding their sum
// and this rank's side (`own`) its own.
std::vector<size_t> element_counts(ProcessGroups& groups, GroupKind group, std::span<const int64_t> rows,
                                   const Tensor& full, const Tensor& own, const char* op) {
  if (static_cast<int>(rows.size()) != groups.size(group))
    throw ValueError(std::string("row move: ") + op + " needs one row count per rank of the group");
  require_rows(full, std::accumulate(rows.begin(), rows.end(), int64_t{0}), op);
  require_rows(own, rows[static_cast<size_t>(groups.rank_in(group))], op);
  std::vector<size_t> counts(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) counts[i] = static_cast<size_t>(rows[i] * full.cols);
  return counts;
}

// A one-rank collective out of place is a copy.
comm::Work local_copy(const Tensor& send, const Tensor& recv) {
  if (send.data != recv.data && send.rows > 0) kernels::copy(send, recv);
  return {};
}

}  // namespace

comm::Work all_reduce(ProcessGroups& groups, GroupKind group, const Tensor& inout) {
  require_contiguous(inout, "all_reduce");
  comm::Communicator* c = groups.comm(group);
  if (!c) return {};
  groups.traffic().record(group, CollectiveKind::all_reduce, inout.bytes());
  if (inout.device.is_cuda()) return device_group(groups, group, inout, nullptr).all_reduce(inout);
  return c->all_reduce(inout.data, inout.data, static_cast<size_t>(inout.numel()), inout.dtype, ReduceOp::sum);
}

comm::Work reduce_scatter(ProcessGroups& groups, GroupKind group, const Tensor& send, const Tensor& recv) {
  require_same_kind(send, recv, "reduce_scatter");
  require_rows(send, recv.rows * groups.size(group), "reduce_scatter");
  comm::Communicator* c = groups.comm(group);
  if (!c) return local_copy(send, recv);
  groups.traffic().record(group, CollectiveKind::reduce_scatter, send.bytes());
  if (on_device(send, recv)) return device_group(groups, group, send, &recv).reduce_scatter(send, recv);
  return c->reduce_scatter(send.data, recv.data, static_cast<size_t>(recv.numel()), send.dtype, ReduceOp::sum);
}

comm::Work reduce_scatterv(ProcessGroups& groups, GroupKind group, const Tensor& send, const Tensor& recv,
                           std::span<const int64_t> rows) {
  require_same_kind(send, recv, "reduce_scatterv");
  const std::vector<size_t> counts = element_counts(groups, group, rows, send, recv, "reduce_scatterv");
  comm::Communicator* c = groups.comm(group);
  if (!c) return local_copy(send, recv);
  groups.traffic().record(group, CollectiveKind::reduce_scatterv, send.bytes());
  if (on_device(send, recv)) return device_group(groups, group, send, &recv).reduce_scatterv(send, recv, counts);
  return c->reduce_scatterv(send.data, recv.data, counts, send.dtype, ReduceOp::sum);
}

comm::Work all_gather(ProcessGroups& groups, GroupKind group, const Tensor& send, const Tensor& recv) {
  require_same_kind(send, recv, "all_gather");
  require_rows(recv, send.rows * groups.size(group), "all_gather");
  comm::Communicator* c = groups.comm(group);
  if (!c) return local_copy(send, recv);
  groups.traffic().record(group, CollectiveKind::all_gather, recv.bytes());
  if (on_device(send, recv)) return device_group(groups, group, send, &recv).all_gather(send, recv);
  return c->all_gather(send.data, recv.data, static_cast<size_t>(send.numel()), send.dtype);
}

comm::Work all_gatherv(ProcessGroups& groups, GroupKind group, const Tensor& send, const Tensor& recv,
                       std::span<const int64_t> rows) {
  require_same_kind(send, recv, "all_gatherv");
  const std::vector<size_t> counts = element_counts(groups, group, rows, recv, send, "all_gatherv");
  comm::Communicator* c = groups.comm(group);
  if (!c) return local_copy(send, recv);
  groups.traffic().record(group, CollectiveKind::all_gatherv, recv.bytes());
  if (on_device(send, recv)) return device_group(groups, group, send, &recv).all_gatherv(send, recv, counts);
  return c->all_gatherv(send.data, recv.data, counts, send.dtype);
}

}  // namespace seam::boundary::rows
