#include "runtime/boundary/output_move.h"

#include "seam/errors.h"

namespace seam::boundary {

namespace {
constexpr Layout kDp = Layout::of({TokenAxis::ATTN_DP});
constexpr Layout kCp = Layout::of({TokenAxis::ATTN_CP});
constexpr Layout kTp = Layout::of({TokenAxis::ATTN_TP_SCATTER});
}  // namespace

EdgeDecl exit_edge(const ResolvedStage& stage) {
  EdgeDecl e;
  e.produced = stage.output;
  e.residual = stage.residual;
  // An FFN exit leaves its output and the residual on the rows it hands on.
  e.need = StageInput{stage.handed_on, {}, {}};
  e.residual_to = stage.handed_on;
  return e;
}

OutputMove select_output_move(const Topology& t, BatchVariant v, const EdgeDecl& exit) {
  const StageOutput& produced = exit.produced;
  const UpdateFacts& update = *produced.update;
  if (!update.at_producer && !update.can_defer_across_layers)
    throw NotSupportedError("a deferred update must guarantee its lifetime across layers");
  if (!update.adds_plainly && !update.at_producer && t.pp > 1)
    throw NotSupportedError("pipeline boundaries require a plain add or a producer-written residual");
  if (!exit.need || !exit.residual_to || exit.need->layout != *exit.residual_to)
    throw NotSupportedError("edge=" + describe(exit));
  const Layout out = produced.layout;
  const Layout residual = exit.residual;
  const Layout to = *exit.residual_to;
  auto unsupported = [&]() -> OutputMove {
    throw NotSupportedError("produced=" + describe(produced) + " residual=" + residual.to_string() +
                            " to=" + to.to_string());
  };

  if (out == residual && to == residual) return {OutputMoveKind::KEEP};
  if (out == residual && residual.has(TokenAxis::ATTN_TP_SCATTER) && to == residual - kTp)
    return {OutputMoveKind::UPDATE_THEN_ATTN_TP_GATHER};
  if (residual - out == kTp && (to == residual || to == out)) {
    // The output is on full rows while the residual is sliced (MHC on an input-scattered batch).
    const bool rs = produced.leaves_for_reduce_scatter;
    return {OutputMoveKind::OUTPUT_ON_RESIDUAL_SHARD, rs, to != residual};
  }
  if (to != residual || !out.subset_of(residual)) return unsupported();
  const Layout returned = residual - out;
  if (returned == kCp) {
    if (!produced.group) return {OutputMoveKind::CP_TAKE_BACK};
    // An attention-CP reduce-scatter completes the sum only when the sum group is the CP group.
    const bool cp_rs = produced.leaves_for_reduce_scatter && t.cp_over_attn_cp && v == BatchVariant::CONTEXT_PARALLEL &&
                       t.attn_dp == 1 && t.attn_tp == 1 && t.sum_group_ranks(*produced.group, 0) == t.attn_cp_ranks(0);
    if (cp_rs) return {OutputMoveKind::CP_REDUCE_SCATTER, true};
    if (produced.always_leaves) return unsupported();
    return {OutputMoveKind::CP_TAKE_BACK};  // after the exit's all-reduce
  }
  if (returned == (kDp | kCp)) return {OutputMoveKind::DP_CP_TAKE_BACK};
  if (returned == kDp) return {OutputMoveKind::RETURNS_OVER_DP};
  return unsupported();
}

}  // namespace seam::boundary
