#include <cstdint>
#include "runtime/boundary/introspection.h"

#include <sstream>

namespace seam::boundary {

namespace {
std::string group_text(std::optional<SumGroup> g) { return std::string(sum_group_name(g)); }

void append(std::string& out, const std::string& part) {
  if (part.empty()) return;
  if (!out.empty()) out += ", ";
  out += part;
}

std::string_view pre_move_text(PreMove m) {
  switch (m) {
    case PreMove::NONE: return "";
    case PreMove::ATTN_TP_REDUCE_SCATTER: return "ATTN_TP reduce_scatter onto slice";
    case PreMove::ATTN_TP_SLICE: return "attention-TP slice";
    case PreMove::TP_REDUCE_SCATTER: return "TP reduce_scatter onto slice";
    case PreMove::TP_SLICE: return "TP slice";
    case PreMove::CP_REDUCE_SCATTER: return "ATTN_CP reduce_scatter onto CP shard";
    case PreMove::CP_TAKE_BACK: return "CP take-back";
  }
  return "?";
}

// The stage a path line names on the far side of an edge.
std::string producer_name(const StagePlan& plan) {
  const StageDeclaration& d = plan.declaration();
  if (plan.enters_stack()) return "embed";
  if (plan.is_prepared_branch()) return "branch";
  return std::string(stage_kind_name(d.previous()->kind));
}
std::string consumer_name(const StagePlan& plan) {
  if (plan.following()) return std::string(stage_kind_name(plan.following()->kind));
  return plan.terminal() ? "norm" : "next";
}

}  // namespace

std::string describe(const StageOutput& o) {
  std::string s = o.layout.to_string();
  if (o.group) {
    s += " owes " + group_text(o.group);
    if (o.always_leaves) s += " (declared)";
  }
  if (o.leaves_for_next_layer) s += " may-defer";
  if (o.leaves_for_reduce_scatter) s += " may-rs";
  if (o.leaves_for_reduce_scatterv) s += " may-rsv";
  if (o.transform) s += " transform=" + o.transform->name;
  return s;
}

std::string describe(const EdgeDecl& e) {
  std::string s = "produced=" + describe(e.produced) + " residual=" + e.residual.to_string();
  if (e.need) s += " need=" + e.need->layout.to_string();
  if (e.residual_to) s += " residual_to=" + e.residual_to->to_string();
  if (e.residual_joins_sum) s += " residual-joins-sum";
  return s;
}

std::string EntryStep::describe() const {
  std::string s(pre_move_text(pre_move));
  if (enters_stack) append(s, "enter");
  if (residual_move == ResidualMove::ATTN_TP_SLICE) append(s, "residual attention-TP slice");
  if (residual_move == ResidualMove::ATTN_TP_GATHER) append(s, "residual attention-TP gather");
  switch (read) {
    case ReadKind::UPDATE_READ:
      if (all_reduce) append(s, group_text(all_reduce) + " all_reduce" + (tries_fusions ? " (fused candidates first)" : ""));
      append(s, "update+read");
      break;
    case ReadKind::RESIDUAL_JOINS_SUM:
      append(s, "residual joins partial, " + group_text(all_reduce) + " all_reduce, read");
      break;
    case ReadKind::DP_PARTIAL_GATHER:
      append(s, std::string("DP gather (partial, completes ATTN_TP") + (places_cp_shards ? ", places CP shards" : "") +
                    "), read");
      break;
    case ReadKind::DP_REPLICATE_GATHER:
      if (all_reduce) append(s, group_text(all_reduce) + " all_reduce");
      append(s, std::string("update+read, DP gather (replicate") + (places_cp_shards ? ", places CP shards" : "") + ")");
      break;
  }
  if (input_move == InputMove::ATTN_TP_GATHER) append(s, "input attention-TP gather");
  if (input_move == InputMove::CP_GATHER) append(s, "input CP gather");
  return s;
}

std::string OutputMove::describe() const {
  switch (kind) {
    case OutputMoveKind::KEEP: return "";
    case OutputMoveKind::UPDATE_THEN_ATTN_TP_GATHER: return "update into residual slice, attention-TP gather at exit";
    case OutputMoveKind::OUTPUT_ON_RESIDUAL_SHARD:
      return std::string(completes_sum ? "TP reduce_scatter" : "TP slice") + " onto residual slice at exit" +
             (gathers_back ? ", update, TP all_gather" : "");
    case OutputMoveKind::CP_TAKE_BACK: return "CP take-back at exit";
    case OutputMoveKind::CP_REDUCE_SCATTER: return "ATTN_CP reduce_scatter at exit";
    case OutputMoveKind::DP_CP_TAKE_BACK: return "DP+CP take-back at exit";
    case OutputMoveKind::RETURNS_OVER_DP: return "";
  }
  return "?";
}

std::string FfnDecision::describe() const {
  const std::string g = group_text(group);
  switch (completion) {
    case FfnCompletion::CARRY_SUM:
      return g + " all_reduce at next input (deferred)" + (flags.defer_moe_finalize ? " or MoE finalize handoff" : "");
    case FfnCompletion::CARRY_SUM_THEN_DP_SCATTER: return g + " all_reduce + DP scatter at next input (deferred)";
    case FfnCompletion::DEFER_DP_STEP:
      return g + (dp_step == DpStep::REDUCE_SCATTERV ? " reduce_scatterv" : " reduce_scatter") + " at next input (deferred)";
    case FfnCompletion::COMPLETE_NOW: break;
  }
  switch (dp_step) {
    case DpStep::REDUCE_SCATTERV: return g + " reduce_scatterv at exit";
    case DpStep::REDUCE_SCATTER: return g + " reduce_scatter at exit";
    case DpStep::SCATTER: return group ? g + " all_reduce in compute, DP scatter at exit" : "DP scatter at exit";
    case DpStep::NONE: break;
  }
  if (declared_sum) return group_text(declared_sum) + " sum left to next input's reduce_scatter (declared)";
  if (flags.mlp_reduce_scatter) return g + " sum completed by the exit's reduce_scatter";
  return group ? g + " all_reduce in compute" : "complete (no sum)";
}

std::string describe(const BranchEntry& b) {
  auto move = [](const RowMove& m) {
    return m.from == m.to ? std::string("keep") : m.from.to_string() + " -> " + m.to.to_string();
  };
  return "branch input (already read): input " + move(b.input) + ", residual " + move(b.residual);
}

std::string describe_entry(const BoundEntry& e) {
  if (e.plain && e.non_plain)
    return "plain add: " + e.plain->step.describe() + "; other update: " + e.non_plain->step.describe();
  return (e.plain ? e.plain : e.non_plain)->step.describe();
}

std::string describe_exit(const StagePlan& plan, const BoundPath& p) {
  const StageOutput& out = p.stage.output;
  if (plan.kind() == StageKind::ATTENTION) {
    if (plan.finishes_directly() || p.mixer_exit.declared_sum)
      return out.declared_sum() ? group_text(out.group) + " partial sum left to next input (declared)" : "complete (no sum)";
    if (p.mixer_exit.hands_on) return group_text(out.group) + " all_reduce at next input (deferred)";
    return out.group ? group_text(out.group) + " all_reduce in compute" : "complete (no sum)";
  }
  // An FFN's exit depends on the batch's padding: describe the decision for each mode.
  const Topology& t = plan.context().topology;
  auto decided = [&](PaddingMode mode) {
    std::vector<int64_t> tokens(t.attn_dp, t.attn_tp * 4);
    const BatchFacts batch = BatchFacts::make(tokens, 0, t.attn_tp, mode, p.variant);
    const FfnDecision d = decide_ffn_exit(p.ffn_exit, batch, plan.fusions(), &plan);
    // A move that completes the sum itself names where the sum runs.
    if (p.output_move.completes_sum && d.completion == FfnCompletion::COMPLETE_NOW && d.flags.mlp_reduce_scatter)
      return group_text(out.group) + " sum completed by " + p.output_move.describe();
    std::string s = d.describe();
    std::string move = p.output_move.describe();
    if (!move.empty()) s += ", " + move;
    return s;
  };
  const std::string max_len = decided(PaddingMode::MAX_LEN);
  const std::string sum_len = decided(PaddingMode::SUM_LEN);
  return max_len == sum_len ? max_len : "MAX_LEN: " + max_len + "; SUM_LEN: " + sum_len;
}

std::vector<std::string> describe_plan(const StagePlan& plan) {
  std::vector<std::string> lines;
  const std::string kind(stage_kind_name(plan.kind()));
  for (int i = 0; i < kBatchVariantCount; ++i) {
    const auto v = static_cast<BatchVariant>(i);
    if (!plan.has_path(v)) continue;
    const BoundPath& p = plan.path(v);
    const std::string tag = " [" + std::string(batch_variant_name(v)) + "]";
    const std::string entry = p.branch ? describe(*p.branch) : describe_entry(p.entry);
    lines.push_back(producer_name(plan) + "->" + kind + tag + " input: " + entry);
    lines.push_back(kind + "->" + consumer_name(plan) + tag + ": " + describe_exit(plan, p));
  }
  return lines;
}

}  // namespace seam::boundary
