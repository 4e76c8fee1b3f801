#include "runtime/boundary/resolver.h"

#include <vector>

#include "seam/errors.h"

namespace seam::boundary {

namespace {
constexpr Layout kCp = Layout::of({TokenAxis::ATTN_CP});
constexpr Layout kTp = Layout::of({TokenAxis::ATTN_TP_SCATTER});

// A sum over a group of one rank is already complete.
std::optional<SumGroup> owed_group(const Topology& t, SumGroup g) {
  return t.sum_group_size(g) > 1 ? std::optional<SumGroup>(g) : std::nullopt;
}

// Rows the source of `decl` leaves arriving when the stage enters the stack (§2.4 first row).
Arrival stack_entry_arrival(const PlanContext& ctx, BatchVariant v) {
  const RowLayouts rows = row_layouts(ctx.topology, v);
  Arrival a;
  a.produced.layout = v == BatchVariant::SEQUENCE_PARALLEL ? rows.local : rows.attention;
  if (v == BatchVariant::INPUT_SCATTERED) {  // the vocab-parallel embedding leaves its TP partial
    a.produced.group = SumGroup::TP;
    a.produced.always_leaves = true;
  }
  a.residual = a.produced.layout;
  a.capabilities.plain = true;
  return a;
}

bool owes_declared_tp(const StageOutput& produced) {
  return produced.always_leaves && produced.group == SumGroup::TP;
}

ResolvedStage resolve_attention(const PlanContext& ctx, BatchVariant v, const StageDeclaration& d,
                                const StageDeclaration* following, const Arrival& arrival) {
  const Topology& t = ctx.topology;
  const RowLayouts rows = row_layouts(t, v);
  const bool sp = v == BatchVariant::SEQUENCE_PARALLEL;
  const bool owes = !sp && t.attn_tp > 1;
  ResolvedStage r;
  r.input = resolve_input(ctx, v, d);
  r.output.layout = sp ? rows.local : rows.attention;
  if (owes) r.output.group = SumGroup::ATTN_TP;
  const bool before_ffn = following && following->kind == StageKind::FFN;
  const bool before_mixer = following && following->kind == StageKind::ATTENTION;
  r.output.always_leaves = owes && (d.reduction == ProducerReduction::PARTIAL || before_ffn);
  r.output.leaves_for_next_layer = owes && d.reduction == ProducerReduction::SCOPED && before_mixer;
  r.output.update = d.update;
  r.output.transform = d.output_transform;
  r.residual = consumer_residual(ctx, v, d, arrival);
  r.handed_on = r.output.layout;
  return r;
}

// may_leave / may_scatter of §2.3 (the sum may move past the exit / an RS may complete it).
struct FfnPermissions {
  bool may_leave = true;
  bool may_scatter = true;
};
FfnPermissions ffn_permissions(const Topology& t, BatchVariant v, bool on_cp_shards) {
  const bool cp_shards = t.prefill_cp_shards_tokens();
  // The DSA/MLA CP reduce-scatter exists only without attention DP (§3.3: it asserts attn_dp
  // == 1); under DP x CP the next rule applies, so no batch defers, reduce-scatters or RSvs
  // its sum (§2.6 row 17). (A decode batch there chose a DP reduce-scatter, which the row moves
  // cannot run under attention CP.)
  if (cp_shards && t.cp_over_attn_cp && !t.attn_dp_enabled()) return {v != BatchVariant::CONTEXT_PARALLEL, true};
  if (cp_shards || t.attn_dp_enabled()) {
    const bool ok = t.attn_cp == 1 || on_cp_shards;
    return {ok, ok};
  }
  return {};
}

bool ffn_on_rank_rows(const Topology& t, const StageDeclaration& d) {
  if (d.sparse) return t.moe_on_local_rows();
  if (d.dense_tp_size) {
    if (*d.dense_tp_size != 1 && *d.dense_tp_size != t.tp)
      throw ValueError("dense FFN rows support local compute or the full TP group");
    return *d.dense_tp_size == 1;
  }
  return t.dense_ffn_fully_dp();
}

ResolvedStage resolve_ffn(const PlanContext& ctx, BatchVariant v, const StageDeclaration& d) {
  const Topology& t = ctx.topology;
  const RowLayouts rows = row_layouts(t, v);
  const bool on_cp_shards = d.sparse && t.attn_cp > 1 && t.moe_dp == t.attn_cp && !t.cp_over_attn_cp;
  const std::optional<SumGroup> group = owed_group(t, d.sparse ? SumGroup::MOE_OUTPUT : SumGroup::TP);
  const bool can_move_output = !d.output_transform || d.output_transform->before_reduce_scatter;
  const bool use_rs = policy_allows_reduce_scatter(ctx.policy) && can_move_output;
  const bool use_rsv = policy_allows_reduce_scatterv(ctx.policy) && can_move_output;
  const bool at_producer = d.update.at_producer;

  ResolvedStage r;
  r.input.read = d.read;
  r.output.update = d.update;
  r.output.transform = d.output_transform;
  if (v == BatchVariant::SEQUENCE_PARALLEL) {  // the linears gather and reduce-scatter themselves
    r.input.layout = rows.full;
    r.input.gathers_itself = kTp & rows.local;
    r.output.layout = r.residual = r.handed_on = rows.local;
  } else if (v == BatchVariant::INPUT_SCATTERED) {
    r.input.layout = rows.full;
    r.output.layout = rows.attention;
    r.output.group = group;
    r.output.leaves_for_reduce_scatter = group && use_rs && (at_producer || !d.terminal);
    r.residual = at_producer ? rows.local : rows.attention;
    r.handed_on = at_producer && !d.terminal ? rows.local : rows.attention;
  } else if (ffn_on_rank_rows(t, d)) {  // complete output on this rank's own rows
    r.input.layout = r.output.layout = r.residual = rows.local;
    r.handed_on = d.terminal ? rows.attention : rows.local;
  } else {
    const FfnPermissions p = ffn_permissions(t, v, on_cp_shards);
    r.input.layout = on_cp_shards ? (kCp & rows.attention) : rows.full;
    r.output.layout = r.input.layout;
    r.output.group = group;
    r.output.leaves_for_next_layer = group && p.may_leave && !d.terminal && !at_producer &&
                                     d.update.can_defer_across_layers && !d.output_transform &&
                                     d.reduction == ProducerReduction::SCOPED;
    r.output.leaves_for_reduce_scatter = group && use_rs && p.may_scatter;
    r.output.leaves_for_reduce_scatterv = group && use_rsv && p.may_leave;
    r.residual = r.handed_on = rows.attention;
  }
  // Handoff rows: a dense layer before a TBO split must already be back on attention rows, and an
  // FFN handing off to another pipeline rank always returns them (§3.5), as the last layer does.
  const auto exit_rows = d.exit_rows();
  const bool hands_attention_rows =
      d.hands_off_to_pipeline || exit_rows == HandoffRows::ATTENTION ||
      (exit_rows == HandoffRows::TBO_SPLIT && t.dense_ffn_fully_dp() && t.two_batch_overlap);
  if (hands_attention_rows && v != BatchVariant::SEQUENCE_PARALLEL) r.handed_on = rows.attention;
  return r;
}

// The arrival contract of §2.4 for a resolved producer.
Arrival arrival_of(BatchVariant v, const StageDeclaration& producer, const ResolvedStage& r) {
  Arrival a;
  a.capabilities.plain = producer.update.adds_plainly;
  a.capabilities.non_plain = !producer.update.adds_plainly;
  a.produced.layout = r.handed_on;
  if (producer.kind == StageKind::ATTENTION) {
    a.residual = r.residual;  // an attention stage leaves the residual where it ran
    const bool carries = producer.reduction == ProducerReduction::PARTIAL || r.output.always_leaves ||
                         r.output.leaves_for_next_layer;
    if (carries) {
      a.produced = r.output;
      a.produced.update.reset();
    }
    return a;
  }
  a.residual = r.handed_on;  // an FFN exit leaves output and residual on its handoff rows
  if (v == BatchVariant::INPUT_SCATTERED && !producer.update.at_producer) {
    // The next attention's TP reduce-scatter completes the sum the FFN left.
    a.produced.group = SumGroup::TP;
    a.produced.always_leaves = true;
  }
  return a;
}
}  // namespace

void PlanContext::validate() const {
  topology.validate();
  require_resolved(policy);
}

RowLayouts row_layouts(const Topology& t, BatchVariant v) {
  const AxisSizes sizes = t.axis_sizes(v == BatchVariant::CONTEXT_PARALLEL);
  using A = TokenAxis;
  return {Layout{}, Layout::sharded_over({A::ATTN_DP, A::ATTN_CP}, sizes),
          Layout::sharded_over({A::ATTN_DP, A::ATTN_CP, A::ATTN_TP_SCATTER}, sizes)};
}

StageInput resolve_input(const PlanContext& ctx, BatchVariant v, const StageDeclaration& d) {
  if (d.kind == StageKind::FFN) return resolve_ffn(ctx, v, d).input;
  const Topology& t = ctx.topology;
  const RowLayouts rows = row_layouts(t, v);
  StageInput in;
  in.layout = rows.attention;
  in.read = d.read;
  const bool scattered_variant = v == BatchVariant::SEQUENCE_PARALLEL || v == BatchVariant::INPUT_SCATTERED;
  if (d.gathers_tp_input && (scattered_variant || t.ag_after_qlora)) in.gathers_itself = kTp & rows.local;
  return in;
}

ResolvedStage resolve_stage(const PlanContext& ctx, BatchVariant v, const StageDeclaration& decl,
                            const StageDeclaration* following, const Arrival& arrival) {
  return decl.kind == StageKind::ATTENTION ? resolve_attention(ctx, v, decl, following, arrival)
                                           : resolve_ffn(ctx, v, decl);
}

Layout consumer_residual(const PlanContext& ctx, BatchVariant v, const StageDeclaration& consumer,
                         const Arrival& arrival) {
  if (consumer.kind == StageKind::FFN) return resolve_ffn(ctx, v, consumer).residual;
  // The attention entry reduce-scatters an input-scattered TP partial onto slices and keeps the
  // residual sliced; otherwise the residual stays where it arrived.
  if (v == BatchVariant::INPUT_SCATTERED && owes_declared_tp(arrival.produced) &&
      consumer.reduction == ProducerReduction::PARTIAL)
    return arrival.residual | (kTp & row_layouts(ctx.topology, v).local);
  return arrival.residual;
}

const Arrival* ArrivalMemo::find(BatchVariant v, const StageDeclaration* decl) const {
  const auto& at = at_[static_cast<size_t>(v)];
  const auto it = at.find(decl);
  return it == at.end() ? nullptr : &it->second;
}

void ArrivalMemo::store(BatchVariant v, const StageDeclaration* decl, const Arrival& arrival) {
  at_[static_cast<size_t>(v)].insert_or_assign(decl, arrival);
}

namespace {
// What arrives at `decl` when that does not depend on what reached an attention producer: the
// stack entry, an FFN producer's output, or a prepared branch.
Arrival arrival_without_attention_producer(const PlanContext& ctx, BatchVariant v, const StageDeclaration& decl,
                                           ArrivalMemo* memo) {
  using Source = StageDeclaration::Source;
  switch (decl.source) {
    case Source::STACK_ENTRY: return stack_entry_arrival(ctx, v);
    case Source::PREVIOUS: {
      const StageDeclaration& producer = *decl.source_decl;
      return arrival_of(v, producer, resolve_stage(ctx, v, producer, &decl, Arrival{}));
    }
    case Source::PREPARED_FROM: {
      // A branch reuses the source's already-read input: complete rows where the source read them,
      // with the residual where it sat while the source ran.
      const StageDeclaration& src = *decl.source_decl;
      Arrival a;
      a.produced.layout = resolve_input(ctx, v, src).layout;
      a.residual = consumer_residual(ctx, v, src, arrival_at(ctx, v, src, memo));
      a.capabilities.plain = true;
      return a;
    }
    case Source::UNSET: break;
  }
  throw ValueError("attention output needs its incoming residual placement");
}
}  // namespace

Arrival arrival_at(const PlanContext& ctx, BatchVariant v, const StageDeclaration& decl, ArrivalMemo* memo) {
  // An attention producer's output rows depend on what reached it: walk back over a run of
  // attention producers to an arrival known without them (or memoised), then resolve forward.
  // A loop, not recursion: a run may be tens of thousands of stages long.
  std::vector<const StageDeclaration*> consumers;  // decl, then each attention producer's consumer upstream
  const StageDeclaration* d = &decl;
  Arrival a;
  while (true) {
    // Only chain nodes (reached through source_decl, alive while decl is) are memoised, not decl.
    if (const Arrival* known = memo && d != &decl ? memo->find(v, d) : nullptr) {
      a = *known;
      break;
    }
    if (d->source == StageDeclaration::Source::PREVIOUS && d->source_decl->kind == StageKind::ATTENTION) {
      consumers.push_back(d);
      d = d->source_decl.get();
      continue;
    }
    a = arrival_without_attention_producer(ctx, v, *d, memo);
    if (memo && d != &decl) memo->store(v, d, a);
    break;
  }
  for (auto it = consumers.rbegin(); it != consumers.rend(); ++it) {
    const StageDeclaration& producer = *(*it)->source_decl;
    a = arrival_of(v, producer, resolve_stage(ctx, v, producer, *it, a));
    if (memo && *it != &decl) memo->store(v, *it, a);
  }
  return a;
}

Arrival arrival_from(const PlanContext& ctx, BatchVariant v, const StageDeclaration& producer,
                     const StageDeclaration* consumer, ArrivalMemo* memo) {
  // Only an attention producer's output rows depend on what reached it.
  const Arrival upstream = producer.kind == StageKind::ATTENTION ? arrival_at(ctx, v, producer, memo) : Arrival{};
  return arrival_of(v, producer, resolve_stage(ctx, v, producer, consumer, upstream));
}

EdgeDecl make_edge(const PlanContext& ctx, BatchVariant v, const StageDeclaration* producer,
                   const StageDeclaration* consumer, ArrivalMemo* memo) {
  if (!producer && !consumer) throw ValueError("a boundary needs at least one declared side");
  const Arrival a = producer ? arrival_from(ctx, v, *producer, consumer, memo) : stack_entry_arrival(ctx, v);
  EdgeDecl e;
  e.produced = a.produced;
  e.residual = a.residual;
  e.capabilities = a.capabilities;
  if (consumer) {
    e.need = resolve_input(ctx, v, *consumer);
    e.residual_to = consumer_residual(ctx, v, *consumer, a);
    e.residual_joins_sum = v == BatchVariant::INPUT_SCATTERED && a.capabilities.plain && !a.capabilities.non_plain &&
                           consumer->kind == StageKind::FFN;
  }
  return e;
}

void reject_unsupported_topology(const PlanContext& ctx, const StageDeclaration& d) {
  const Topology& t = ctx.topology;
  if (d.kind != StageKind::FFN) return;
  const bool cp_shards = t.prefill_cp_shards_tokens();
  if (d.sparse && t.moe_on_local_rows() && cp_shards && !t.cp_over_attn_cp && t.attn_dp_enabled())
    throw NotSupportedError("a MoE dispatched per DP shard under attention DP and GQA prefill CP");
  if (d.sparse && !t.moe_on_local_rows() && t.attn_cp > 1 && t.moe_dp == t.attn_cp) {
    if (cp_shards && t.cp_over_attn_cp)
      throw NotSupportedError("a MoE on the TP group with moe_dp_size == attn_cp_size under DSA or MLA prefill CP");
    if (t.attn_dp_enabled())
      throw NotSupportedError("a MoE on the TP group with moe_dp_size == attn_cp_size under attention DP and attention CP");
  }
  if (d.update.at_producer && !d.update.adds_plainly) {
    if (d.sparse && t.moe_gathers_over_moe_cp())
      throw NotSupportedError("MHC does not support a MoE gathered over the MoE-CP group");
    if (t.attn_tp_input_scattered && t.attn_cp > 1)
      throw NotSupportedError("MHC with input-scattered attention under attention CP");
  }
}

}  // namespace seam::boundary
