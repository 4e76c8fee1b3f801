// libFuzzer target: the boundary planner's public construction API (make_stages,
// make_attn_stage, make_ffn_stage) on declarations, neighbours, a topology and a policy decoded
// from the input. Only the documented refusals (ValueError, TypeError, NotSupportedError) may come
// out; any other exception, a crash, a hang or a leak is a finding.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "seam/errors.h"
#include "runtime/boundary/factories.h"

using namespace seam;
using namespace seam::boundary;

namespace {

constexpr ReadFacts kReads[] = {NORM_READ, NORM_QUANT_READ, MHC_READ};
constexpr UpdateFacts kUpdates[] = {ADD, MHC_ATTENTION_UPDATE, MHC_FFN_UPDATE};

/// Mostly consistent sizes (attention and MoE factorisations of one tp), so that construction
/// gets past validate(); now and then one field takes any value, so that validate() is fuzzed too.
Topology decode_topology(FuzzedDataProvider& in) {
  Topology t;
  t.attn_dp = in.ConsumeIntegralInRange(1, 4);
  t.attn_cp = in.ConsumeIntegralInRange(1, 2);
  t.attn_tp = in.ConsumeIntegralInRange(1, 4);
  t.tp = t.attn_dp * t.attn_cp * t.attn_tp;
  t.moe_ep = in.ConsumeBool() ? t.attn_dp : 1;
  t.moe_dp = in.ConsumeBool() && t.moe_ep == 1 ? t.attn_dp : 1;
  t.moe_tp = t.tp / (t.moe_ep * t.moe_dp);
  const int dense[] = {0, 1, t.tp};
  t.moe_dense_tp = dense[in.ConsumeIntegralInRange(0, 2)];
  t.pp = in.ConsumeIntegralInRange(1, 4);
  t.dwdp = in.ConsumeIntegralInRange(1, 2);
  bool* flags[] = {&t.enable_prefill_cp, &t.cp_over_attn_cp, &t.moe_cp_all_gather, &t.attn_tp_input_scattered,
                   &t.disable_attn_tp_gather, &t.ag_after_qlora, &t.dp_gatherv, &t.sequence_parallel, &t.moe_a2a_backend,
                   &t.fp4_all_gather, &t.quantized_comm, &t.lora, &t.shared_expert_tp1,
                   &t.moe_output_complete, &t.eagle_speculative, &t.two_batch_overlap};
  for (bool* f : flags) *f = in.ConsumeBool();
  t.elastic_ep_active_dp = in.ConsumeBool() ? in.ConsumeIntegralInRange(0, t.attn_dp) : 0;
  if (in.ConsumeIntegralInRange(0, 7) == 0) {
    int* sizes[] = {&t.tp, &t.attn_tp, &t.attn_dp, &t.attn_cp, &t.moe_ep, &t.moe_tp, &t.moe_dp,
                    &t.moe_dense_tp, &t.pp, &t.dwdp, &t.elastic_ep_active_dp};
    *sizes[in.ConsumeIntegralInRange<size_t>(0, std::size(sizes) - 1)] = in.ConsumeIntegral<int>();
  }
  return t;
}

std::optional<OutputTransform> decode_transform(FuzzedDataProvider& in) {
  if (!in.ConsumeBool()) return std::nullopt;
  return OutputTransform{in.ConsumeBool() ? "sandwich_norm" : "scale", in.ConsumeBool(), nullptr};
}

/// A bare declaration through declare_attn / declare_ffn (which may refuse it: ValueError).
StageDeclaration decode_declaration(FuzzedDataProvider& in, int tp) {
  const ReadFacts read = kReads[in.ConsumeIntegralInRange(0, 2)];
  const UpdateFacts update = kUpdates[in.ConsumeIntegralInRange(0, 2)];
  const auto reduction = static_cast<ProducerReduction>(in.ConsumeIntegralInRange(0, 2));
  if (in.ConsumeBool())
    return declare_attn({.read = read, .update = update, .reduction = reduction,
                         .gathers_tp_input = in.ConsumeBool(), .output_transform = decode_transform(in)});
  FfnOptions o{.sparse = in.ConsumeBool(), .read = read, .update = update, .output_transform = decode_transform(in),
               .next_sparse = in.ConsumeBool(), .reduction = reduction};
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 1: o.dense_tp_size = 1; break;
    case 2: o.dense_tp_size = tp; break;
    case 3: o.dense_tp_size = in.ConsumeIntegralInRange(-1, 16); break;
    default: break;
  }
  if (in.ConsumeBool()) o.handoff_rows = in.ConsumeBool() ? HandoffRows::ATTENTION : HandoffRows::TBO_SPLIT;
  return declare_ffn(o);
}

/// A neighbour as another rank would describe it: a short connected chain of declarations.
StageDeclaration decode_neighbour(FuzzedDataProvider& in, int tp) {
  StageDeclaration d = decode_declaration(in, tp).entering_stack();
  for (int n = in.ConsumeIntegralInRange(0, 3); n > 0; --n) d = decode_declaration(in, tp).with_previous(d);
  if (in.ConsumeBool()) d = d.before_pipeline_cut();
  return d;
}

void construct(FuzzedDataProvider& in) {
  PlanContext ctx{decode_topology(in), static_cast<ReductionPolicy>(in.ConsumeIntegralInRange(0, 4))};
  const int tp = ctx.topology.tp;
  std::vector<StageSpec> specs;
  for (int n = in.ConsumeIntegralInRange(1, 12); n > 0; --n) specs.push_back({decode_declaration(in, tp)});
  StageNeighbours around;
  if (in.ConsumeBool()) around.previous = decode_neighbour(in, tp);
  if (in.ConsumeBool()) around.prepared_from = decode_neighbour(in, tp);
  around.terminal = in.ConsumeBool();
  around.hands_off_to_pipeline = in.ConsumeBool();
  if (in.ConsumeBool()) around.following = decode_declaration(in, tp);  // bare: its source unset
  if (in.ConsumeBool()) {
    // A single stage through make_attn_stage / make_ffn_stage, sourced like make_stages would.
    StageSpec one = specs.front();
    one.declaration = around.previous ? one.declaration.with_previous(*around.previous)
                      : around.prepared_from ? one.declaration.with_prepared_from(*around.prepared_from)
                                             : one.declaration.entering_stack();
    if (around.terminal) one.declaration = one.declaration.as_terminal();
    std::optional<StageDeclaration> following;
    if (around.following) following = around.following->with_previous(one.declaration);
    if (in.ConsumeBool()) (void)make_attn_stage(ctx, one, following);
    else (void)make_ffn_stage(ctx, one, following);
    return;
  }
  (void)make_stages(ctx, std::move(specs), around);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  try {
    construct(in);
  } catch (const ValueError&) {
  } catch (const TypeError&) {
  } catch (const NotSupportedError&) {
  }
  return 0;
}
