// The row moves of runtime/boundary/rows on real processes (run under mpirun with tp * pp ranks):
// attention-TP gather / reduce-scatter, DP gather (partial and replicate, MAX_LEN and SUM_LEN),
// DP scatter, DP reduce-scatter, RSv, CP gather / take-back / reduce-scatter, and the pipeline
// handoff. Every rank computes every other rank's inputs, so each result is checked element by
// element against a reference built locally. Values are small integers: every sum is exact.
//
//   mpirun -n 4 test_row_moves --attn-dp 2 [--attn-cp 1] [--pp 1] [--dp-gatherv 1]
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/norm/rms_norm.h"
#include "layouts/batch_facts.h"
#include "seam/errors.h"
#include "runtime/boundary/factories.h"
#include "runtime/boundary/rows/host_fusion.h"
#include "runtime/boundary/rows/cp_moves.h"
#include "runtime/boundary/rows/dp_moves.h"
#include "runtime/boundary/rows/pp_handoff.h"
#include "runtime/boundary/rows/process_groups.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/rows/tp_moves.h"
#include "seam/communicator.h"
#include "runtime/residual/norm.h"

using namespace seam;
using namespace seam::boundary::rows;

namespace {

constexpr int64_t kCols = 5;
int g_rank = -1;

#define ROWS_CHECK(cond, ...)                                                           \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "[rank %d] %s:%d: %s: ", g_rank, __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                \
      std::fprintf(stderr, "\n");                                                       \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

// A distinct small integer per (source, row, column).
float value(int source, int64_t row, int64_t col) { return static_cast<float>(source * 100 + row * 7 + col); }

struct Rows {
  Buffer storage;
  Tensor t;
  explicit Rows(int64_t rows) : storage(static_cast<size_t>(rows * kCols) * 4 + 4), t(storage.as_tensor(DType::f32, rows, kCols)) {}
  float& at(int64_t r, int64_t c) const { return static_cast<float*>(t.row(r))[c]; }
  template <class F>
  void fill(F f) const {
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t c = 0; c < kCols; ++c) at(r, c) = f(r, c);
  }
  template <class F>
  void expect(F f, const char* what) const {
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t c = 0; c < kCols; ++c)
        ROWS_CHECK(at(r, c) == f(r, c), "%s: row %lld col %lld is %g, expected %g", what, static_cast<long long>(r),
                   static_cast<long long>(c), at(r, c), f(r, c));
  }
};

void attn_tp_moves(ProcessGroups& g) {
  const Topology& t = g.topology();
  const int me = g.attn().tp, base = g.tp_rank() - me;
  const int64_t slice_rows = 3, rows = slice_rows * t.attn_tp;
  Rows slice(slice_rows), full(rows);
  slice.fill([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c); });
  attn_tp_gather(g, slice.t, full.t).wait();
  full.expect([&](int64_t r, int64_t c) { return value(base + static_cast<int>(r / slice_rows), r % slice_rows, c); },
              "attention-TP gather");

  if (t.tp > 1) {  // the reference's assertion, verbatim
    std::string message;
    const Rows uneven(t.tp + 1);
    try {
      token_slice(g, GroupKind::TP, uneven.t);
    } catch (const ValueError& e) {
      message = e.what();
    }
    const std::string want = "Expected total tokens " + std::to_string(t.tp + 1) + " % tp_size " + std::to_string(t.tp) + " to be 0";
    ROWS_CHECK(message == want, "TP slice of rows that do not divide: '%s'", message.c_str());
  }

  full.fill([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c); });
  attn_tp_reduce_scatter(g, full.t, slice.t).wait();
  slice.expect([&](int64_t r, int64_t c) {
    float s = 0;
    for (int k = 0; k < t.attn_tp; ++k) s += value(base + k, me * slice_rows + r, c);
    return s;
  }, "attention-TP reduce-scatter");
}

// The DP moves for one token list and padding mode.
void dp_moves(ProcessGroups& g, const std::vector<int64_t>& tokens, PaddingMode mode) {
  const Topology& t = g.topology();
  const auto& at = g.attn();
  const BatchFacts f = BatchFacts::make(tokens, at.dp, t.attn_tp * t.attn_cp, mode);
  Scratch scratch;
  Rows local(f.local_rows()), global(f.global_rows());
  const int dp_base = t.tp_rank_of({at.dp, 0, 0});
  // The replica and its row for each global row.
  auto owner = [&](int64_t row, int64_t* local_row) {
    int dp = 0;
    while (dp + 1 < f.dp_size() && row >= f.offset(dp + 1)) ++dp;
    *local_row = row - f.offset(dp);
    return dp;
  };
  const std::string tag = std::string(mode == PaddingMode::MAX_LEN ? "MAX_LEN" : "SUM_LEN");
  // Under dp_gatherv a SUM_LEN gather is one TP all_gatherv, never a zero-fill and all-reduce.
  const bool gathers_v = mode == PaddingMode::SUM_LEN && t.dp_gathers_v();
  auto tp_calls = [&](CollectiveKind kind) { return g.traffic().count(GroupKind::TP, kind).calls; };
  const uint64_t gathervs = tp_calls(CollectiveKind::all_gatherv), reduces = tp_calls(CollectiveKind::all_reduce);

  // Partial: each attention-TP rank holds a partial; the gather sums them.
  local.fill([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c); });
  dp_gather(g, f, local.t, global.t, DpGatherMode::PARTIAL, scratch);
  global.expect([&](int64_t r, int64_t c) {
    int64_t lr;
    const int dp = owner(r, &lr);
    float s = 0;
    for (int k = 0; k < t.attn_tp; ++k) s += value(t.tp_rank_of({dp, 0, k}), lr, c);
    return s;
  }, ("DP gather partial " + tag).c_str());

  // Replicate: every attention-TP rank holds its replica's copy.
  local.fill([&](int64_t r, int64_t c) { return value(dp_base, r, c); });
  dp_gather(g, f, local.t, global.t, DpGatherMode::REPLICATE, scratch);
  global.expect([&](int64_t r, int64_t c) {
    int64_t lr;
    const int dp = owner(r, &lr);
    return value(t.tp_rank_of({dp, 0, 0}), lr, c);
  }, ("DP gather replicate " + tag).c_str());
  local.expect([&](int64_t r, int64_t c) { return value(dp_base, r, c); }, ("DP gather replicate leaves its input " + tag).c_str());
  if (gathers_v)
    ROWS_CHECK(tp_calls(CollectiveKind::all_gatherv) == gathervs + 2 && tp_calls(CollectiveKind::all_reduce) == reduces,
               "a SUM_LEN DP gather under dp_gatherv is one TP all_gatherv");
  else
    ROWS_CHECK(tp_calls(CollectiveKind::all_gatherv) == gathervs, "no all_gatherv without dp_gatherv");

  dp_scatter(f, global.t, local.t);
  local.expect([&](int64_t r, int64_t c) { return value(dp_base, r, c); }, ("DP scatter " + tag).c_str());

  // Reduce-scatter: each TP rank holds a partial of the whole global buffer.
  global.fill([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c); });
  auto summed = [&](int64_t r, int64_t c) {
    float s = 0;
    for (int k = 0; k < t.tp; ++k) s += value(k, f.offset(at.dp) + r, c);
    return s;
  };
  if (mode == PaddingMode::MAX_LEN && t.attn_cp == 1) {
    dp_reduce_scatter(g, f, global.t, local.t, scratch);
    local.expect(summed, "DP reduce-scatter");
  }
  if (t.attn_cp == 1) {
    dp_reduce_scatterv(g, f, global.t, local.t, &scratch);
    local.expect(summed, ("DP reduce_scatterv " + tag).c_str());
  }
}

void cp_moves(ProcessGroups& g) {
  const Topology& t = g.topology();
  const int me = g.attn().cp;
  auto source = [&](int cp) { return t.tp_rank_of({g.attn().dp, cp, g.attn().tp}); };
  const int64_t shard_rows = 2;
  Rows shard(shard_rows), full(shard_rows * t.attn_cp);
  shard.fill([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c); });
  cp_gather(g, shard.t, full.t);
  full.expect([&](int64_t r, int64_t c) { return value(source(static_cast<int>(r / shard_rows)), r % shard_rows, c); },
              "CP gather");
  cp_take_back(g, full.t, shard.t);
  shard.expect([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c); }, "CP take-back");
  full.fill([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c); });
  cp_reduce_scatter(g, full.t, shard.t);
  shard.expect([&](int64_t r, int64_t c) {
    float s = 0;
    for (int k = 0; k < t.attn_cp; ++k) s += value(source(k), me * shard_rows + r, c);
    return s;
  }, "CP reduce-scatter");

  // Uneven shards: rank r holds r + 1 rows.
  std::vector<int64_t> rows;
  for (int k = 0; k < t.attn_cp; ++k) rows.push_back(k + 1);
  Scratch scratch;
  Rows uneven(me + 1), padded(static_cast<int64_t>(t.attn_cp) * t.attn_cp);
  uneven.fill([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c); });
  cp_gather_padded(g, uneven.t, rows, padded.t, scratch);
  padded.expect([&](int64_t r, int64_t c) {
    const int k = static_cast<int>(r / t.attn_cp);
    return r % t.attn_cp <= k ? value(source(k), r % t.attn_cp, c) : 0.0f;
  }, "CP padded gather");
  cp_take_back_padded(g, padded.t, rows, uneven.t);
  uneven.expect([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c); }, "CP padded take-back");
}

// DP x CP: each CP rank's shard placed inside its replica's rows, summed over attention TP.
void dp_cp_moves(ProcessGroups& g, const std::vector<int64_t>& tokens) {
  const Topology& t = g.topology();
  const auto& at = g.attn();
  const BatchFacts f = BatchFacts::make(tokens, at.dp, t.attn_tp * t.attn_cp, PaddingMode::SUM_LEN);
  // Replica d's shards: CP rank r holds r + d rows (they fit the replica's padded rows below).
  auto shard_rows = [&](int dp) {
    std::vector<int64_t> rows;
    for (int r = 0; r < t.attn_cp; ++r) rows.push_back(std::min<int64_t>(r + dp, f.rows(dp) / t.attn_cp));
    return rows;
  };
  const std::vector<int64_t> mine = shard_rows(at.dp);
  Rows shard(mine[static_cast<size_t>(at.cp)]), global(f.global_rows());
  shard.fill([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c); });
  dp_gather_cp_shards(g, f, shard.t, mine, global.t, DpGatherMode::PARTIAL);
  global.expect([&](int64_t r, int64_t c) {
    for (int dp = 0; dp < f.dp_size(); ++dp) {
      const std::vector<int64_t> rows = shard_rows(dp);
      int64_t at_row = f.offset(dp);
      for (int cp = 0; cp < t.attn_cp; ++cp) {
        if (r >= at_row && r < at_row + rows[static_cast<size_t>(cp)]) {
          float s = 0;
          for (int k = 0; k < t.attn_tp; ++k) s += value(t.tp_rank_of({dp, cp, k}), r - at_row, c);
          return s;
        }
        at_row += rows[static_cast<size_t>(cp)];
      }
    }
    return 0.0f;
  }, "DP x CP gather");
  Rows back(mine[static_cast<size_t>(at.cp)] + 1);
  dp_cp_take_back(g, f, global.t, mine, back.t);
  back.expect([&](int64_t r, int64_t c) {
    if (r == back.t.rows - 1) return 0.0f;
    float s = 0;
    for (int k = 0; k < t.attn_tp; ++k) s += value(t.tp_rank_of({at.dp, at.cp, k}), r, c);
    return s;
  }, "DP x CP take-back");
}

void pipeline_handoff(ProcessGroups& g) {
  PipelineHandoff handoff(g);
  // The residual may sit on fewer rows (attention-TP slices) than the hidden states.
  const int64_t rows = 4, residual_rows = 2;
  if (g.pp_rank() > 0) {
    const PipelineTensors in = handoff.receive();
    ROWS_CHECK(in.has_residual == (g.pp_rank() % 2 == 1) && in.hidden_states.rows == rows, "handoff header");
    ROWS_CHECK(!in.has_residual || in.residual.rows == residual_rows, "handoff residual rows");
    ROWS_CHECK(in.declared_partial == (g.pp_rank() % 2 == 0), "handoff declared-partial flag");
    const int sender = g.topology().world_rank(g.pp_rank() - 1, g.tp_rank());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < kCols; ++c) {
        ROWS_CHECK(static_cast<float*>(in.hidden_states.row(r))[c] == value(sender, r, c), "handoff hidden");
        if (in.has_residual && r < residual_rows)
          ROWS_CHECK(static_cast<float*>(in.residual.row(r))[c] == value(sender + 1000, r, c), "handoff residual");
      }
  }
  if (g.next_stage() >= 0) {
    const int me = g.topology().world_rank(g.pp_rank(), g.tp_rank());
    Rows hidden(rows), residual(residual_rows);
    hidden.fill([&](int64_t r, int64_t c) { return value(me, r, c); });
    residual.fill([&](int64_t r, int64_t c) { return value(me + 1000, r, c); });
    handoff.send({hidden.t, residual.t, g.pp_rank() % 2 == 0, g.pp_rank() % 2 == 1});
  }
}

// Seam's host fused all-reduce + add + RMSNorm candidate equals an all-reduce followed by the
// add + RMSNorm kernel (integer-valued partials: the sum is exact in any order).
void host_fusion(ProcessGroups& g) {
  const int64_t rows = 3;
  std::vector<float> weight(kCols);
  for (int64_t c = 0; c < kCols; ++c) weight[c] = 0.5f + 0.25f * static_cast<float>(c);
  residual::RmsNorm norm(Tensor::contiguous(weight.data(), DType::f32, 1, kCols), 1e-6f);
  boundary::PlanContext ctx{g.topology(), boundary::ReductionPolicy::AR};
  auto fusion = std::make_shared<HostAllReduceNormFusion>(g);
  auto stages = boundary::make_stages(ctx, {{boundary::declare_ffn(), &norm, {.fusions = fusion}}});
  const auto candidates = fusion->ffn_input(stages[0].plan());
  ROWS_CHECK(candidates.size() == 1 && candidates[0].completes == SumGroup::ATTN_TP, "one ATTN_TP candidate");

  const BatchFacts facts = BatchFacts::make(std::vector<int64_t>{rows}, 0, 1, PaddingMode::MAX_LEN);
  // The candidate completes the group the runner passes (FusionArgs::group), not one it derives:
  // under attention DP, TP and ATTN_TP differ.
  for (const SumGroup group : {SumGroup::ATTN_TP, SumGroup::TP}) {
    Rows partial(rows), residual(rows), expected_residual(rows), expected(rows), summed(rows);
    partial.fill([&](int64_t r, int64_t c) { return value(g.tp_rank(), r, c) / 64.0f; });
    residual.fill([&](int64_t r, int64_t c) { return value(7, r, c) / 32.0f; });
    summed.fill([&](int64_t r, int64_t c) { return partial.at(r, c); });
    expected_residual.fill([&](int64_t r, int64_t c) { return residual.at(r, c); });
    all_reduce(g, group_of(group), summed.t).wait();
    kernels::add_rms_norm(summed.t, expected_residual.t, nullptr, norm.spec(), expected.t);

    const auto fused = candidates[0].run({partial.t, residual.t, &facts, nullptr, group});
    ROWS_CHECK(fused.has_value(), "the candidate accepts a small fp32 batch");
    Rows got(rows);
    got.fill([&](int64_t r, int64_t c) { return static_cast<float*>(fused->input.row(r))[c]; });
    got.expect([&](int64_t r, int64_t c) { return expected.at(r, c); }, "fused input");
    residual.expect([&](int64_t r, int64_t c) { return expected_residual.at(r, c); }, "fused residual");
  }

  Rows partial(rows), residual(rows);
  const Tensor extra = residual.t;
  ROWS_CHECK(!candidates[0].run({partial.t, residual.t, &facts, &extra, SumGroup::ATTN_TP}),
             "declines a post-residual addition");
  ROWS_CHECK(!candidates[0].run({partial.t.slice_rows(0, 0), residual.t.slice_rows(0, 0), &facts, nullptr,
                                 SumGroup::ATTN_TP}),
             "declines an empty batch");
  ROWS_CHECK(!candidates[0].run({partial.t, residual.t, &facts, nullptr, std::nullopt}), "declines when no sum is owed");
}

}  // namespace

int main(int argc, char** argv) {
  int attn_dp = 1, attn_cp = 1, pp = 1;
  bool dp_gatherv = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (flag == "--attn-dp") attn_dp = v;
    else if (flag == "--attn-cp") attn_cp = v;
    else if (flag == "--pp") pp = v;
    else if (flag == "--dp-gatherv") dp_gatherv = v != 0;
  }
  auto world = comm::Communicator::create_world();
  g_rank = world->rank();
  Topology topology = Topology::make(world->size() / pp, attn_dp, attn_cp);
  topology.pp = pp;
  topology.dp_gatherv = dp_gatherv;
  ProcessGroups groups(world, topology);
  attn_tp_moves(groups);
  std::vector<int64_t> tokens;
  for (int dp = 0; dp < attn_dp; ++dp) tokens.push_back(dp == 1 ? 0 : 3 + 2 * dp);  // replica 1 idle
  for (PaddingMode mode : {PaddingMode::MAX_LEN, PaddingMode::SUM_LEN}) dp_moves(groups, tokens, mode);
  cp_moves(groups);
  dp_cp_moves(groups, std::vector<int64_t>(static_cast<size_t>(attn_dp), 6));
  pipeline_handoff(groups);
  if (pp == 1 && attn_cp == 1) host_fusion(groups);
  world->barrier().wait();
  if (g_rank == 0) std::printf("row moves OK: %s\n", topology.describe().c_str());
  return 0;
}
