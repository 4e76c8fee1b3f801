// Layouts, batch facts and topology arithmetic (§1.1–§1.4, §3.1).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>

#include "layouts/batch_facts.h"
#include "seam/errors.h"
#include "layouts/layout.h"
#include "seam/tensor.h"
#include "layouts/topology.h"

using namespace seam;
using A = TokenAxis;

TEST_CASE("a layout drops size-one axes, so equal layouts hold the same tokens") {
  const AxisSizes sizes{.attn_dp = 2, .attn_cp = 1, .attn_tp = 4};
  const Layout local = Layout::sharded_over({A::ATTN_DP, A::ATTN_CP, A::ATTN_TP_SCATTER}, sizes);
  CHECK(local == Layout::of({A::ATTN_DP, A::ATTN_TP_SCATTER}));
  CHECK(Layout::sharded_over({A::ATTN_CP}, sizes).empty());
  CHECK((local - Layout::of({A::ATTN_DP})) == Layout::of({A::ATTN_TP_SCATTER}));
  CHECK(Layout::of({A::ATTN_DP}).subset_of(local));
  CHECK(local.to_string() == "{ATTN_DP,ATTN_TP_SCATTER}");
  CHECK(Layout{}.to_string() == "{}");
}

TEST_CASE("batch facts: the worked example of attn_dp=2, attn_tp=2, tokens [3, 1]") {
  const int64_t tokens[] = {3, 1};
  const BatchFacts max_len = BatchFacts::make(tokens, 1, 2, PaddingMode::MAX_LEN);
  CHECK(max_len.rows(0) == 4);
  CHECK(max_len.rows(1) == 4);
  CHECK(max_len.global_rows() == 8);
  CHECK(max_len.offset(1) == 4);
  CHECK(max_len.local_rows() == 4);
  CHECK(max_len.tokens(1) == 1);

  const BatchFacts sum_len = BatchFacts::make(tokens, 1, 2, PaddingMode::SUM_LEN);
  CHECK(sum_len.rows(0) == 4);
  CHECK(sum_len.rows(1) == 2);
  CHECK(sum_len.global_rows() == 6);
  CHECK(sum_len.offset(1) == 4);
  CHECK(sum_len.local_rows() == 2);

  const int64_t idle[] = {0, 0};
  CHECK_FALSE(BatchFacts::make(idle, 0, 2, PaddingMode::MAX_LEN).has_tokens());
  CHECK_THROWS_AS(BatchFacts::make(tokens, 2, 2, PaddingMode::MAX_LEN), ValueError);
}

TEST_CASE("uneven CP shard rows: one count per attention-CP rank, fitting the replica's rows") {
  const int64_t tokens[] = {6};
  const BatchFacts facts = BatchFacts::make(tokens, 0, 1, PaddingMode::MAX_LEN, BatchVariant::CONTEXT_PARALLEL);
  const int64_t fits[] = {3, 1, 2, 0};
  CHECK(facts.with_cp_shards(fits, 4).cp_shard_rows().size() == 4);
  CHECK(facts.with_cp_shards({}, 4).cp_shard_rows().empty());  // equal shards
  CHECK_THROWS_WITH_AS(facts.with_cp_shards(fits, 2), "CP shard rows need one count per attention-CP rank (2), got 4",
                       ValueError);
  const int64_t too_many[] = {4, 3};
  CHECK_THROWS_WITH_AS(facts.with_cp_shards(too_many, 2), "CP shards of 7 rows do not fit their replica's 6 rows",
                       ValueError);
  const int64_t negative[] = {-1, 2};
  CHECK_THROWS_WITH_AS(facts.with_cp_shards(negative, 2), "CP shard rows must not be negative", ValueError);
}

TEST_CASE("slice_rows stays within the tensor") {
  float storage[4 * 2] = {};
  const Tensor t = Tensor::contiguous(storage, DType::f32, 4, 2);
  CHECK(t.slice_rows(1, 3).row(0) == t.row(1));
  CHECK(t.slice_rows(4, 0).rows == 0);
  CHECK_THROWS_WITH_AS(t.slice_rows(2, 3), "slice_rows: rows [2, 5) are outside a tensor of 4 rows", ValueError);
  CHECK_THROWS_AS(t.slice_rows(-1, 1), ValueError);
  CHECK_THROWS_AS(t.slice_rows(1, -1), ValueError);
}

TEST_CASE("padding mode follows the reference's rules") {
  const int64_t even[] = {4, 3}, skewed[] = {8, 0, 0, 0};
  CHECK(choose_padding_mode(even, false, false) == PaddingMode::MAX_LEN);
  CHECK(choose_padding_mode(skewed, false, false) == PaddingMode::SUM_LEN);
  CHECK(choose_padding_mode(even, true, false) == PaddingMode::SUM_LEN);   // extend over >1 replica
  CHECK(choose_padding_mode(even, true, true) == PaddingMode::MAX_LEN);    // forcing a2a backend
}

TEST_CASE("the active variant is the first match of SP, input-scattered, CP") {
  CHECK(select_batch_variant({}) == BatchVariant::ORDINARY);
  CHECK(select_batch_variant({.sp_active = true, .input_scattered = true}) == BatchVariant::SEQUENCE_PARALLEL);
  CHECK(select_batch_variant({.input_scattered = true, .shards_over_cp = true}) == BatchVariant::INPUT_SCATTERED);
  CHECK(select_batch_variant({.shards_over_cp = true}) == BatchVariant::CONTEXT_PARALLEL);
  CHECK(batch_variant_name(BatchVariant::CONTEXT_PARALLEL) == "CONTEXT_PARALLEL");
}

TEST_CASE("rank layout: attention TP innermost, then CP, then DP") {
  Topology t = Topology::make(8, 2, 2);  // attn_tp = 2
  CHECK(t.attn_tp == 2);
  const auto c = t.attn_coords(7);
  CHECK(c.dp == 1);
  CHECK(c.cp == 1);
  CHECK(c.tp == 1);
  CHECK(t.tp_rank_of({1, 0, 1}) == 5);
  CHECK(t.attn_tp_ranks(5) == std::vector<int>{4, 5});
  CHECK(t.attn_cp_ranks(5) == std::vector<int>{5, 7});
  CHECK(t.attn_dp_ranks(5) == std::vector<int>{1, 5});
  CHECK(t.sum_group_ranks(SumGroup::TP, 5).size() == 8);
  t.attn_dp = 3;
  CHECK_THROWS_AS(t.validate(), ValueError);
}

TEST_CASE("sizes whose product overflows int are refused, not wrapped or divided by") {
  // 65536 * 65536 is 2^32: in int it wraps to 0, a division by zero in make().
  CHECK_THROWS_AS(Topology::make(1, 65536, 65536), ValueError);
  CHECK_THROWS_AS(Topology::make(1, 0, 1), ValueError);
  // 641 * 6700417 = 2^32 + 1, which wraps to 1 in 32 bits: it must not pass for tp = 1.
  Topology t = Topology::make(1);
  t.attn_dp = 641;
  t.attn_cp = 6700417;
  CHECK_THROWS_AS(t.validate(), ValueError);
  t.attn_dp = t.attn_cp = 1;
  t.moe_ep = 641;
  t.moe_dp = 6700417;
  CHECK_THROWS_AS(t.validate(), ValueError);
  t.moe_ep = t.moe_dp = 1;
  CHECK_NOTHROW(t.validate());
}

TEST_CASE("elastic EP's active DP count: negative refused, a huge one compared without overflow") {
  Topology t = Topology::make(4, 2);
  t.elastic_ep_active_dp = -1;
  CHECK_THROWS_AS(t.validate(), ValueError);
  // 2^30 * attn_tp 2 overflows int; in 64 bits it is simply not tp.
  t.elastic_ep_active_dp = 1 << 30;
  CHECK_NOTHROW(t.validate());
  CHECK_FALSE(t.can_use_dp_reduce_scatter());
  t.elastic_ep_active_dp = 2;
  CHECK(t.can_use_dp_reduce_scatter());
}

TEST_CASE("the MoE output group is EP, MoE-TP, or the merged TP group") {
  Topology t = Topology::make(4);
  t.moe_ep = 2;
  t.moe_tp = 2;  // hybrid EP2 x TP2, no MoE-DP: one merged TP all-reduce
  CHECK(t.can_merge_post_experts_all_reduce());
  CHECK(t.post_experts_reduction_group() == Topology::MoeOutputGroup::TP);
  CHECK(t.sum_group_ranks(SumGroup::MOE_OUTPUT, 3) == std::vector<int>{0, 1, 2, 3});
  CHECK(t.moe_ep_ranks(3) == std::vector<int>{1, 3});
  CHECK(t.moe_tp_ranks(3) == std::vector<int>{2, 3});

  Topology ep = Topology::make(4);
  ep.moe_ep = 4;
  ep.moe_tp = 1;
  CHECK(ep.post_experts_reduction_group() == Topology::MoeOutputGroup::EP);
  CHECK(ep.post_experts_sum_is_one_all_reduce());  // the EP group is the whole TP group

  Topology moe_dp = Topology::make(4);
  moe_dp.moe_dp = 2;
  moe_dp.moe_tp = 2;
  CHECK(moe_dp.post_experts_reduction_group() == Topology::MoeOutputGroup::MOE_TP);
  CHECK(moe_dp.sum_group_ranks(SumGroup::MOE_OUTPUT, 3) == std::vector<int>{2, 3});
  CHECK_FALSE(moe_dp.post_experts_sum_is_one_all_reduce());  // a separate group
}

TEST_CASE("variants a topology builds") {
  Topology t = Topology::make(4);
  CHECK(t.builds_variant(BatchVariant::ORDINARY));
  CHECK_FALSE(t.builds_variant(BatchVariant::INPUT_SCATTERED));
  t.attn_tp_input_scattered = true;
  CHECK(t.builds_variant(BatchVariant::INPUT_SCATTERED));
  t.moe_a2a_backend = true;  // input-scattered is off with an a2a MoE backend
  CHECK_FALSE(t.builds_variant(BatchVariant::INPUT_SCATTERED));
  Topology cp = Topology::make(4, 1, 2);
  CHECK_FALSE(cp.builds_variant(BatchVariant::CONTEXT_PARALLEL));  // CP without prefill CP
  cp.enable_prefill_cp = true;
  CHECK(cp.builds_variant(BatchVariant::CONTEXT_PARALLEL));
}

TEST_CASE("a buffer on huge pages is 2 MiB aligned and zeroed, whatever the kernel grants") {
  constexpr size_t kBytes = (size_t{3} << 20) + 100;  // not a whole number of huge pages
  const Buffer huge(kBytes, Pages::huge);
  REQUIRE(huge.bytes() == kBytes);
  CHECK(reinterpret_cast<uintptr_t>(huge.data()) % (size_t{2} << 20) == 0);
  const auto* bytes = static_cast<const unsigned char*>(huge.data());
  CHECK(std::all_of(bytes, bytes + kBytes, [](unsigned char b) { return b == 0; }));
  const Buffer base(100);
  CHECK(reinterpret_cast<uintptr_t>(base.data()) % 64 == 0);
  CHECK(Buffer(0, Pages::huge).data() == nullptr);
}
