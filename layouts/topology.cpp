#include "layouts/topology.h"

#include <cstdint>
#include <sstream>

#include "seam/errors.h"

namespace seam {

Topology Topology::make(int tp, int attn_dp, int attn_cp) {
  Topology t;
  t.tp = tp;
  t.attn_dp = attn_dp;
  t.attn_cp = attn_cp;
  // In 64 bits: the product of two int sizes may overflow int (validate() then refuses it).
  const int64_t shards = int64_t{attn_dp} * attn_cp;
  t.attn_tp = (attn_dp > 0 && attn_cp > 0) ? static_cast<int>(tp / shards) : 0;
  t.moe_tp = tp;
  t.validate();
  return t;
}

void Topology::validate() const {
  auto positive = {tp, attn_tp, attn_dp, attn_cp, moe_ep, moe_tp, moe_dp, pp, dwdp};
  for (int v : positive)
    if (v < 1) throw ValueError("parallel sizes must be positive: " + describe());
  // Products in 64 bits: each size is a positive int, so three of them cannot overflow int64.
  if (int64_t{attn_dp} * attn_cp * attn_tp != tp)
    throw ValueError("tp must equal attn_dp * attn_cp * attn_tp: " + describe());
  if (int64_t{moe_dp} * moe_ep * moe_tp != tp)
    throw ValueError("tp must equal moe_dp * moe_ep * moe_tp: " + describe());
  if (moe_dense_tp != 0 && moe_dense_tp != 1 && moe_dense_tp != tp)
    throw ValueError("dense FFN rows support local compute or the full TP group");
  if (elastic_ep_active_dp < 0)
    throw ValueError("elastic_ep_active_dp must be 0 (off) or a count of DP ranks, not " + std::to_string(elastic_ep_active_dp));
}

bool Topology::input_scattered_configured() const {
  return attn_tp_input_scattered && tp > 1 && !attn_dp_enabled() && !prefill_cp_shards_tokens() &&
         !moe_a2a_backend && !dense_ffn_fully_dp();
}

bool Topology::should_use_dp_reduce_scatterv() const {
  // §3.1: RSv is valid only with attention TP 1; otherwise the exit falls back to RS or the
  // all-reduce + DP scatter, as an ineligible optional scatter does (§2.1).
  return !fp4_all_gather && !moe_a2a_backend && attn_dp_enabled() && attn_tp == 1 && moe_ep == attn_dp;
}

bool Topology::can_use_dp_reduce_scatter() const {
  // In 64 bits: validate() bounds neither factor above.
  return elastic_ep_active_dp == 0 || tp == int64_t{elastic_ep_active_dp} * attn_tp;
}

bool Topology::post_experts_sum_is_one_all_reduce() const {
  return !moe_a2a_backend && !moe_output_complete && !quantized_comm && !lora && !shared_expert_tp1 &&
         !(moe_ep > 1 && moe_tp > 1) && sum_group_size(SumGroup::MOE_OUTPUT) == tp;
}

bool Topology::builds_variant(BatchVariant v) const {
  switch (v) {
    case BatchVariant::ORDINARY: return true;
    case BatchVariant::CONTEXT_PARALLEL: return prefill_cp_shards_tokens();
    case BatchVariant::INPUT_SCATTERED: return input_scattered_configured();
    case BatchVariant::SEQUENCE_PARALLEL: return sequence_parallel;
  }
  return false;
}

Topology::AttnCoords Topology::attn_coords(int tp_rank) const {
  return {tp_rank / (attn_cp * attn_tp), tp_rank / attn_tp % attn_cp, tp_rank % attn_tp};
}

Topology::MoeCoords Topology::moe_coords(int tp_rank) const {
  return {tp_rank / (moe_ep * moe_tp), tp_rank / moe_tp % moe_ep, tp_rank % moe_tp};
}

namespace {
// Ranks first, first + stride, ... (count of them).
std::vector<int> strided(int first, int stride, int count) {
  std::vector<int> ranks(count);
  for (int i = 0; i < count; ++i) ranks[i] = first + i * stride;
  return ranks;
}
}  // namespace

std::vector<int> Topology::attn_tp_ranks(int tp_rank) const {
  return strided(tp_rank - attn_coords(tp_rank).tp, 1, attn_tp);
}
std::vector<int> Topology::attn_cp_ranks(int tp_rank) const {
  const AttnCoords c = attn_coords(tp_rank);
  return strided(tp_rank_of({c.dp, 0, c.tp}), attn_tp, attn_cp);
}
std::vector<int> Topology::attn_dp_ranks(int tp_rank) const {
  const AttnCoords c = attn_coords(tp_rank);
  return strided(tp_rank_of({0, c.cp, c.tp}), attn_cp * attn_tp, attn_dp);
}
std::vector<int> Topology::moe_ep_ranks(int tp_rank) const {
  const MoeCoords c = moe_coords(tp_rank);
  return strided(c.dp * moe_ep * moe_tp + c.tp, moe_tp, moe_ep);
}
std::vector<int> Topology::moe_tp_ranks(int tp_rank) const {
  return strided(tp_rank - moe_coords(tp_rank).tp, 1, moe_tp);
}
std::vector<int> Topology::tp_ranks() const { return strided(0, 1, tp); }

Topology::MoeOutputGroup Topology::post_experts_reduction_group() const {
  if (moe_ep > 1 && moe_tp == 1) return MoeOutputGroup::EP;
  if (moe_ep > 1 && can_merge_post_experts_all_reduce()) return MoeOutputGroup::TP;
  return MoeOutputGroup::MOE_TP;
}

std::vector<int> Topology::sum_group_ranks(SumGroup group, int tp_rank) const {
  switch (group) {
    case SumGroup::ATTN_TP: return attn_tp_ranks(tp_rank);
    case SumGroup::ATTN_CP: return attn_cp_ranks(tp_rank);
    case SumGroup::TP: return tp_ranks();
    case SumGroup::MOE_OUTPUT:
      switch (post_experts_reduction_group()) {
        case MoeOutputGroup::EP: return moe_ep_ranks(tp_rank);
        case MoeOutputGroup::MOE_TP: return moe_tp_ranks(tp_rank);
        case MoeOutputGroup::TP: return tp_ranks();
      }
  }
  throw ValueError("unsupported output sum group: " + std::to_string(static_cast<int>(group)));
}

int Topology::sum_group_size(SumGroup group) const {
  switch (group) {
    case SumGroup::ATTN_TP: return attn_tp;
    case SumGroup::ATTN_CP: return attn_cp;
    case SumGroup::TP: return tp;
    case SumGroup::MOE_OUTPUT:
      switch (post_experts_reduction_group()) {
        case MoeOutputGroup::EP: return moe_ep;
        case MoeOutputGroup::MOE_TP: return moe_tp;
        case MoeOutputGroup::TP: return tp;
      }
  }
  throw ValueError("unsupported output sum group: " + std::to_string(static_cast<int>(group)));
}

std::string Topology::describe() const {
  std::ostringstream s;
  s << "tp=" << tp << " attn_tp=" << attn_tp << " attn_dp=" << attn_dp << " attn_cp=" << attn_cp
    << " moe_ep=" << moe_ep << " moe_tp=" << moe_tp << " moe_dp=" << moe_dp << " dense_tp=" << dense_tp_size()
    << " pp=" << pp;
  const std::pair<bool, const char*> switches[] = {
      {enable_prefill_cp, "prefill_cp"},         {cp_over_attn_cp, "dsa_mla_cp"},
      {moe_cp_all_gather, "moe_cp_all_gather"},  {attn_tp_input_scattered, "input_scattered"},
      {disable_attn_tp_gather, "no_attn_tp_gather"}, {ag_after_qlora, "ag_after_qlora"}, {dp_gatherv, "dp_gatherv"},
      {sequence_parallel, "sequence_parallel"},  {moe_a2a_backend, "a2a"},
      {fp4_all_gather, "fp4_all_gather"},        {quantized_comm, "quantized_comm"},
      {lora, "lora"},                            {shared_expert_tp1, "shared_expert_tp1"},
      {moe_output_complete, "moe_output_complete"}, {eagle_speculative, "eagle"},
      {two_batch_overlap, "tbo"}};
  for (const auto& [on, name] : switches)
    if (on) s << ' ' << name;
  if (dwdp > 1) s << " dwdp=" << dwdp;
  if (elastic_ep_active_dp > 0) s << " elastic_ep_active_dp=" << elastic_ep_active_dp;
  return s.str();
}

}  // namespace seam
