#include <cstdint>
#include "runtime/boundary/rows/dp_moves.h"

#include <string>
#include <vector>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/rows/tp_moves.h"

namespace seam::boundary::rows {

namespace {

void require_rows(const Tensor& t, int64_t rows, const char* what) {
  if (t.rows != rows)
    throw ValueError(std::string("row move: ") + what + " has " + std::to_string(t.rows) + " rows, the batch needs " +
                     std::to_string(rows));
}

void check_dp_shapes(const ProcessGroups& groups, const BatchFacts& facts, const Tensor& local, const Tensor& global) {
  if (facts.dp_size() != groups.topology().attn_dp || facts.dp_rank() != groups.attn().dp)
    throw ValueError("row move: batch facts do not match this rank's attention-DP replica");
  require_rows(local, facts.local_rows(), "the local tensor");
  require_rows(global, facts.global_rows(), "the global DP buffer");
  require_contiguous(local, "the local tensor");
  require_contiguous(global, "the global DP buffer");
}

void gather_through_all_reduce(ProcessGroups& groups, const BatchFacts& facts, const Tensor& local,
                               const Tensor& global, DpGatherMode mode) {
  const auto& at = groups.attn();
  const bool writes = (mode == DpGatherMode::PARTIAL || at.tp == 0) && at.cp == 0;
  kernels::zero(global);
  if (writes && local.rows > 0) kernels::copy(local, global.slice_rows(facts.offset(facts.dp_rank()), local.rows));
  all_reduce(groups, GroupKind::TP, global).wait();
}

// Where this CP rank's shard starts in the global buffer, after checking the shard counts.
int64_t cp_shard_offset(const ProcessGroups& groups, const BatchFacts& facts, std::span<const int64_t> cp_rows) {
  const int cp = groups.attn().cp;
  if (static_cast<int>(cp_rows.size()) != groups.topology().attn_cp)
    throw ValueError("row move: DP x CP moves need one shard row count per attention-CP rank");
  int64_t before = 0, total = 0;
  for (size_t r = 0; r < cp_rows.size(); ++r) {
    if (static_cast<int>(r) < cp) before += cp_rows[r];
    total += cp_rows[r];
  }
  if (total > facts.rows(facts.dp_rank()))
    throw ValueError("row move: the CP shards hold more rows than their replica's padded rows");
  return facts.offset(facts.dp_rank()) + before;
}

}  // namespace

std::vector<int64_t> dp_cp_shard_rows(const ProcessGroups& groups, const BatchFacts& facts) {
  const std::span<const int64_t> named = facts.cp_shard_rows();
  if (!named.empty()) return {named.begin(), named.end()};
  const int cp = groups.topology().attn_cp;
  if (facts.local_rows() % cp != 0)
    throw ValueError("row move: a DP x CP batch without CP shard rows needs its replica's " +
                     std::to_string(facts.local_rows()) + " rows to split into " + std::to_string(cp) +
                     " equal shards");
  return std::vector<int64_t>(static_cast<size_t>(cp), facts.local_rows() / cp);
}

void dp_gather_cp_shards(ProcessGroups& groups, const BatchFacts& facts, const Tensor& shard,
                         std::span<const int64_t> cp_rows, const Tensor& global, DpGatherMode mode) {
  const int64_t at = cp_shard_offset(groups, facts, cp_rows);
  const int64_t rows = cp_rows[static_cast<size_t>(groups.attn().cp)];
  require_rows(shard, rows, "the CP shard");
  require_rows(global, facts.global_rows(), "the global DP buffer");
  require_contiguous(global, "the global DP buffer");
  kernels::zero(global);
  if ((mode == DpGatherMode::PARTIAL || groups.attn().tp == 0) && rows > 0)
    kernels::copy(shard, global.slice_rows(at, rows));
  all_reduce(groups, GroupKind::TP, global).wait();
}

void dp_cp_take_back(const ProcessGroups& groups, const BatchFacts& facts, const Tensor& global,
                     std::span<const int64_t> cp_rows, const Tensor& shard) {
  const int64_t at = cp_shard_offset(groups, facts, cp_rows);
  const int64_t rows = cp_rows[static_cast<size_t>(groups.attn().cp)];
  if (shard.rows < rows) require_rows(shard, rows, "the CP shard");
  require_rows(global, facts.global_rows(), "the global DP buffer");
  if (rows > 0) kernels::copy(global.slice_rows(at, rows), shard.slice_rows(0, rows));
  kernels::zero(shard.slice_rows(rows, shard.rows - rows));
}

void dp_gather(ProcessGroups& groups, const BatchFacts& facts, const Tensor& local, const Tensor& global,
               DpGatherMode mode, Scratch& scratch) {
  check_dp_shapes(groups, facts, local, global);
  const Topology& t = groups.topology();
  if (facts.padding() == PaddingMode::SUM_LEN && t.dp_gathers_v()) {
    // attn_tp 1: each replica is one TP rank (DP-major), partial and replicate rows alike.
    const Tensor mine = local.slice_rows(0, facts.rows(facts.dp_rank()));
    return all_gatherv(groups, GroupKind::TP, mine, global, facts.rows_per_dp()).wait();
  }
  if (facts.padding() == PaddingMode::SUM_LEN || t.attn_cp > 1) return gather_through_all_reduce(groups, facts, local, global, mode);
  if (t.attn_tp == 1) return all_gather(groups, GroupKind::TP, local, global).wait();
  // One scratch holds the chunk and, when this rank contributes zeros, the zero rows.
  const bool contributes_zeros = mode == DpGatherMode::REPLICATE && groups.attn().tp != 0;
  const int64_t chunk_rows = local.rows / t.attn_tp;
  const Tensor space = scratch.get(local, chunk_rows + (contributes_zeros ? local.rows : 0));
  const Tensor chunk = space.slice_rows(0, chunk_rows);
  Tensor source = local;
  if (contributes_zeros) {
    source = space.slice_rows(chunk_rows, local.rows);
    kernels::zero(source);
  }
  attn_tp_reduce_scatter(groups, source, chunk).wait();
  all_gather(groups, GroupKind::TP, chunk, global).wait();
}

void dp_scatter(const BatchFacts& facts, const Tensor& global, const Tensor& local) {
  const int64_t rows = facts.rows(facts.dp_rank());
  if (local.rows < rows) require_rows(local, rows, "the local tensor");
  require_rows(global, facts.global_rows(), "the global DP buffer");
  if (rows > 0) kernels::copy(global.slice_rows(facts.offset(facts.dp_rank()), rows), local.slice_rows(0, rows));
  kernels::zero(local.slice_rows(rows, local.rows - rows));
}

void dp_reduce_scatter(ProcessGroups& groups, const BatchFacts& facts, const Tensor& global, const Tensor& local,
                       Scratch& scratch) {
  check_dp_shapes(groups, facts, local, global);
  const Topology& t = groups.topology();
  if (facts.padding() != PaddingMode::MAX_LEN) throw NotSupportedError("a DP reduce-scatter needs MAX_LEN padding");
  if (t.attn_cp > 1) throw NotSupportedError("a DP reduce-scatter under attention CP");
  if (t.tp == t.attn_dp) return reduce_scatter(groups, GroupKind::TP, global, local).wait();
  const Tensor chunk = scratch.get(global, global.rows / t.tp);
  reduce_scatter(groups, GroupKind::TP, global, chunk).wait();
  attn_tp_gather(groups, chunk, local).wait();
}

void dp_reduce_scatterv(ProcessGroups& groups, const BatchFacts& facts, const Tensor& global, const Tensor& local,
                        Scratch* scratch) {
  check_dp_shapes(groups, facts, local, global);
  const Topology& t = groups.topology();
  if (t.attn_cp > 1) throw NotSupportedError("a DP reduce_scatterv under attention CP");
  if (t.attn_tp == 1) return reduce_scatterv(groups, GroupKind::TP, global, local, facts.rows_per_dp()).wait();
  // TP rank order is DP-major, attention-TP inner: rank (dp, k) receives slice k of replica dp's rows.
  std::vector<int64_t> counts;
  for (int dp = 0; dp < facts.dp_size(); ++dp)
    for (int k = 0; k < t.attn_tp; ++k) counts.push_back(facts.rows(dp) / t.attn_tp);
  Scratch temporary;
  const Tensor chunk = (scratch ? *scratch : temporary).get(global, facts.local_rows() / t.attn_tp);
  reduce_scatterv(groups, GroupKind::TP, global, chunk, counts).wait();
  attn_tp_gather(groups, chunk, local).wait();
}

}  // namespace seam::boundary::rows
