#include "runtime/boundary/exit.h"

#include "runtime/boundary/fusion.h"

namespace seam::boundary {

namespace {
// §2.5 "sum movable", all but the group: the reference reads these from the topology for every
// FFN and mixer alike, dense or sparse (an unmergeable EP x MoE-TP hybrid or a MoE-CP all-gather
// keeps every stage's sum in compute).
bool topology_lets_sum_move(const Topology& t, BatchVariant v) {
  const bool unmergeable_hybrid = t.moe_ep > 1 && t.moe_tp > 1 && !t.can_merge_post_experts_all_reduce();
  return !t.moe_gathers_over_moe_cp() && !unmergeable_hybrid && !(t.attn_dp_enabled() && t.eagle_speculative) &&
         v != BatchVariant::INPUT_SCATTERED;
}
}  // namespace

FfnExitFacts FfnExitFacts::of(const Topology& t, BatchVariant v, const StageDeclaration& decl,
                              const ResolvedStage& stage, const OutputMove& move) {
  const StageOutput& out = stage.output;
  FfnExitFacts f;
  f.terminal = decl.terminal;
  f.group = out.group;
  f.returns_over_dp = move.kind == OutputMoveKind::RETURNS_OVER_DP;
  f.leaves_for_next_layer = out.leaves_for_next_layer;
  f.leaves_for_reduce_scatter = out.leaves_for_reduce_scatter;
  f.leaves_for_reduce_scatterv = out.leaves_for_reduce_scatterv;
  f.output_move_completes_sum = move.completes_sum;
  f.update_at_producer = out.update && out.update->at_producer;
  f.input_scattered = v == BatchVariant::INPUT_SCATTERED;
  f.multi_rank_tp = t.tp > 1;
  f.dp_attention = t.attn_dp_enabled();
  f.rsv_topology = t.should_use_dp_reduce_scatterv();
  f.rs_topology = t.can_use_dp_reduce_scatter();
  f.sum_movable = out.group && topology_lets_sum_move(t, v);
  // "Batch allows deferral" (§2.5 step 5) asks the same of a dense FFN as of a MoE: the
  // post-experts sum is one TP all-reduce, or LoRA / a TP1 shared expert lets a provider decide.
  f.sum_is_one_all_reduce = t.post_experts_sum_is_one_all_reduce();
  f.provider_may_defer = (t.lora || t.shared_expert_tp1) && !t.moe_a2a_backend && !t.quantized_comm &&
                         t.sum_group_size(SumGroup::MOE_OUTPUT) == t.tp;
  return f;
}

FfnDecision decide_ffn_exit(const FfnExitFacts& f, const BatchFacts& batch, const FusionProvider* fusions,
                            const StagePlan* plan) {
  FfnDecision d;
  d.group = f.group;
  // 1. The DP transport, RSv tried first.
  if (f.returns_over_dp) {
    if (f.rsv_topology && f.leaves_for_reduce_scatterv)
      d.dp_step = DpStep::REDUCE_SCATTERV;
    else if (f.leaves_for_reduce_scatter && batch.padding() == PaddingMode::MAX_LEN && f.rs_topology)
      d.dp_step = DpStep::REDUCE_SCATTER;
    else
      d.dp_step = DpStep::SCATTER;
  }
  const bool dp_reduces = d.dp_step == DpStep::REDUCE_SCATTER || d.dp_step == DpStep::REDUCE_SCATTERV;
  // 2. Compute skips its sum when a boundary reduce-scatter completes it.
  const bool mlp_reduce_scatter =
      dp_reduces || (f.leaves_for_reduce_scatter &&
                     (f.output_move_completes_sum || (f.input_scattered && !f.terminal)));
  // 3. A provider may let a MoE hand its finalize on.
  const bool defer_finalize = fusions && plan && fusions->can_defer_finalize(*plan, batch);
  d.flags.mlp_reduce_scatter = mlp_reduce_scatter;
  if (mlp_reduce_scatter && !f.returns_over_dp && !f.output_move_completes_sum) d.declared_sum = SumGroup::TP;
  // 4. Nothing may leave the exit: complete now.
  if (!f.leaves_for_next_layer && !(f.terminal && defer_finalize)) return d;
  // 5. Whether the sum moves to the next layer's input.
  auto batch_allows_deferral = [&] {
    if (!batch.has_tokens()) return false;
    if (f.sum_is_one_all_reduce) return true;
    return f.provider_may_defer && fusions && plan && fusions->can_defer_all_reduce(*plan, batch);
  };
  const bool sum_moves = f.multi_rank_tp && !f.terminal && f.sum_movable && !mlp_reduce_scatter &&
                         (!f.dp_attention ||
                          (f.returns_over_dp && !f.update_at_producer && d.dp_step == DpStep::SCATTER)) &&
                         batch_allows_deferral();
  d.flags.defer_moe_finalize = defer_finalize;
  d.flags.fuse_mlp_allreduce = defer_finalize || sum_moves;
  // 6. Fused: the partial travels on as a carried sum. Without a group (one rank, a MoE on local
  // rows) the output is complete: it completes now, or hands its finalize on.
  if (d.flags.fuse_mlp_allreduce && f.group) {
    d.completion = f.returns_over_dp ? FfnCompletion::CARRY_SUM_THEN_DP_SCATTER : FfnCompletion::CARRY_SUM;
    d.carried_sum = f.group;
    return d;
  }
  // 7. The RS / RSv itself is left to the next input.
  if (dp_reduces && !f.terminal && f.returns_over_dp && !f.update_at_producer) {
    d.completion = FfnCompletion::DEFER_DP_STEP;
    d.carried_sum = f.group;
  }
  return d;  // 8. otherwise complete now
}

MixerDecision MixerDecision::of(const Topology& t, BatchVariant v, const StageOutput& out) {
  const bool movable = out.group && topology_lets_sum_move(t, v);
  MixerDecision d;
  d.hands_on = out.leaves_for_next_layer && t.tp > 1 && !t.attn_dp_enabled() && movable;
  const bool skips = out.always_leaves || d.hands_on;
  d.flags.fuse_mlp_allreduce = skips;
  d.flags.skips_reduction = skips;
  if (d.hands_on) d.carried_sum = out.group;
  d.declared_sum = out.declared_sum();
  return d;
}

}  // namespace seam::boundary
