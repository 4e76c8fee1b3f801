// StageRunner on real processes (run under mpirun with tp ranks): small decoder stacks executed
// through the bound paths — prepare, PARTIAL finish, exit scopes, the final norm — for every
// attention-DP split of the world and every policy, with uneven (and idle) DP replicas, MAX_LEN
// and SUM_LEN padding. Each rank's final output is compared with a single-process reference
// (no parallelism) for its replica's tokens.
//
//   mpirun -n 4 test_stage_runner
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/norm/elementwise.h"
#include "kernels/quant/fp8.h"
#include "kernels/quant/norm_quant.h"
#include "layouts/errors.h"
#include "runtime/boundary/factories.h"
#include "runtime/boundary/introspection.h"
#include "runtime/boundary/rows/host_fusion.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/rows/tp_moves.h"
#include "runtime/boundary/runner.h"
#include "runtime/comm/communicator.h"
#include "runtime/residual/add_norm.h"
#include "runtime/residual/mhc.h"

using namespace seam;
using namespace seam::boundary;

namespace {

constexpr int64_t kHidden = 8;
int g_rank = -1;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "[rank %d] %s\n", g_rank, what.c_str());
  std::exit(1);
}

// Partial-sum weights that add up to one exactly (binary fractions), per group size.
float weight(int size, int rank) {
  static const std::vector<std::vector<float>> w = {{1.f}, {.25f, .75f}, {}, {.125f, .25f, .375f, .25f}};
  return w.at(size - 1).at(rank);
}

// The embedding of token i of DP replica d.
float embedding(int d, int64_t i, int64_t c) { return std::sin(0.37f * float(d * 101 + i * 13 + c)) + 0.5f; }

// Stage compute: a scale per stage letter; its partial over its sum group is the scale times this
// rank's weight, summed by compute only when the exit did not ask it to skip.
float scale(char letter) { return letter == 'A' ? 3.f : letter == 'M' ? 0.5f : letter == 'F' ? 2.f : 1.5f; }

std::vector<float> rms_norm(const std::vector<float>& x) {
  double sq = 0;
  for (float v : x) sq += double(v) * v;
  const float inv = 1.f / std::sqrt(float(sq / x.size()) + 1e-6f);
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * inv;
  return out;
}

// The single-process reference for one token: residual r; each stage adds scale * norm(r).
// residuals[s] is r as stage s reads it; the last entry is the final norm's output.
// FP8 per-token quantisation and back, as NORM_QUANT_READ's fp8_per_token format reads.
std::vector<float> fake_fp8(const std::vector<float>& y) {
  float absmax = 0;
  for (float v : y) absmax = std::max(absmax, std::fabs(v));
  const float scale = std::max(absmax / 448.f, kernels::kFp8MinScale);
  std::vector<float> out(y.size());
  for (size_t i = 0; i < y.size(); ++i) out[i] = kernels::fp8_e4m3_to_float(kernels::float_to_fp8_e4m3(y[i] * (1.f / scale))) * scale;
  return out;
}

std::vector<std::vector<float>> reference(const std::string& pattern, int d, int64_t i, bool transform, bool fp8 = false) {
  std::vector<std::vector<float>> residuals;
  std::vector<float> r(kHidden);
  for (int64_t c = 0; c < kHidden; ++c) r[c] = embedding(d, i, c);
  for (char letter : pattern) {
    residuals.push_back(r);
    const std::vector<float> in = fp8 && letter == 'A' ? fake_fp8(rms_norm(r)) : rms_norm(r);
    const float doubled = transform && letter != 'M' ? 2.f : 1.f;
    for (int64_t c = 0; c < kHidden; ++c) r[c] += doubled * scale(letter) * in[c];
  }
  residuals.push_back(rms_norm(r));
  return residuals;
}

bool close(float got, float expected, float tolerance = 1e-4f) {
  return std::fabs(got - expected) <= tolerance * (1.f + std::fabs(expected));
}

struct Case {
  std::string pattern;
  int attn_dp;
  ReductionPolicy policy;
  std::vector<int64_t> tokens;
  PaddingMode padding;
  bool a2a = false;              ///< MoE on local rows (all-to-all backend)
  bool input_scattered = false;  ///< the INPUT_SCATTERED variant (embedding arrives as a TP partial)
  bool fused = false;            ///< Seam's host all-reduce+add+norm fusion provider on every stage
  bool capture = false;          ///< every attention prepare captures its updated residual
  bool prefill_cp = false;       ///< DSA-style prefill CP over the whole world: each rank holds a shard
  bool transform = false;        ///< every A and F/E output is doubled by an output transform
  bool sequence_parallel = false;///< inside a LayerNorm-SP region: every boundary stays on the shard
  std::vector<int64_t> cp_shards = {};  ///< prefill CP with uneven (GQA) shards: rows per CP rank
  bool postprocess = false;      ///< FFNs run without an exit scope (operation-scheduled TBO) and postprocess
  bool fp8 = false;              ///< attention reads its input quantised (FP8 per token)
};

std::string name(const Case& k) {
  return k.pattern + " attn_dp=" + std::to_string(k.attn_dp) + " policy=" + std::string(policy_name(k.policy)) +
         " padding=" + (k.padding == PaddingMode::MAX_LEN ? "MAX_LEN" : "SUM_LEN") + (k.a2a ? " a2a" : "") +
         (k.input_scattered ? " input-scattered" : "") + (k.fused ? " fused" : "") + (k.capture ? " capture" : "") + (k.prefill_cp ? " prefill-cp" : "") + (k.transform ? " transform" : "") +
         (k.sequence_parallel ? " sequence-parallel" : "") + (k.cp_shards.empty() ? "" : " gqa-cp") +
         (k.postprocess ? " postprocess" : "") + (k.fp8 ? " fp8" : "");
}

void run_stack(const Case& k, const std::shared_ptr<comm::Communicator>& world);

void run_case(const Case& k, const std::shared_ptr<comm::Communicator>& world) {
  try {
    run_stack(k, world);
  } catch (const std::exception& e) {
    fail(name(k) + ": " + e.what());
  }
}

void run_stack(const Case& k, const std::shared_ptr<comm::Communicator>& world) {
  const int tp = world->size();
  PlanContext ctx;
  ctx.topology = k.prefill_cp ? Topology::make(tp, 1, tp) : Topology::make(tp, k.attn_dp);
  ctx.topology.enable_prefill_cp = k.prefill_cp;
  ctx.topology.cp_over_attn_cp = k.prefill_cp && k.cp_shards.empty();  // else GQA CP, uneven shards
  if (k.a2a) {
    ctx.topology.moe_a2a_backend = true;
    ctx.topology.moe_ep = tp;
    ctx.topology.moe_tp = 1;
  } else if (ctx.topology.attn_tp == 1 && k.attn_dp > 1) {  // the RSv topology: EP over the DP replicas
    ctx.topology.moe_ep = k.attn_dp;
    ctx.topology.moe_tp = tp / k.attn_dp;
  }
  ctx.topology.attn_tp_input_scattered = k.input_scattered;
  ctx.topology.sequence_parallel = k.sequence_parallel;
  ctx.topology.validate();
  ctx.policy = k.policy;
  rows::ProcessGroups groups(world, ctx.topology);
  const std::shared_ptr<const FusionProvider> fusions =
      k.fused ? std::make_shared<rows::HostAllReduceNormFusion>(groups) : nullptr;

  // One norm per stage plus the final norm, weights one.
  Buffer ones_storage(kHidden * 4);
  const Tensor ones = ones_storage.as_tensor(DType::f32, 1, kHidden);
  for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(ones.data)[c] = 1.f;
  std::vector<std::unique_ptr<residual::RmsNorm>> norms;
  std::vector<StageSpec> specs;
  // Doubles a contribution in place (an FFN's may run on its partial before a reduce-scatter).
  auto doubled = [&](bool before_rs) -> std::optional<OutputTransform> {
    if (!k.transform) return std::nullopt;
    return OutputTransform{"double", before_rs, [](const Tensor& t) {
                             for (int64_t i = 0; i < t.rows; ++i)
                               for (int64_t c = 0; c < t.cols; ++c) static_cast<float*>(t.row(i))[c] *= 2.f;
                           }};
  };
  for (char letter : k.pattern) {
    norms.push_back(std::make_unique<residual::RmsNorm>(ones, 1e-6f));
    const StageDeclaration d = letter == 'A'   ? declare_attn({.read = k.fp8 ? NORM_QUANT_READ : NORM_READ,
                                                               .output_transform = doubled(false)})
                               : letter == 'M' ? declare_attn({.read = NORM_READ, .reduction = ProducerReduction::SCOPED,
                                                               .gathers_tp_input = false})
                                               : declare_ffn({.sparse = letter == 'E', .output_transform = doubled(true)});
    specs.push_back({d, norms.back().get(), {.fusions = fusions}});
  }
  residual::RmsNorm final_norm(ones, 1e-6f);
  const auto stages = make_stages(ctx, specs, {.terminal = true});
  std::vector<std::unique_ptr<StageRunner>> runners;
  for (size_t i = 0; i < stages.size(); ++i)
    runners.push_back(std::make_unique<StageRunner>(
        stages[i], groups, *norms[i], k.fp8 && k.pattern[i] == 'A' ? residual::norm_quant_read() : residual::norm_read(),
        residual::add_update()));

  residual::ForwardBatch batch;
  const int dp = groups.attn().dp;
  const BatchVariant variant = k.input_scattered     ? BatchVariant::INPUT_SCATTERED
                               : k.prefill_cp        ? BatchVariant::CONTEXT_PARALLEL
                               : k.sequence_parallel ? BatchVariant::SEQUENCE_PARALLEL
                                                     : BatchVariant::ORDINARY;
  batch.facts = BatchFacts::make(k.tokens, dp, ctx.topology.attn_tp, k.padding, variant).with_cp_shards(k.cp_shards);
  const int64_t local_rows = batch.facts.local_rows();
  // The rows this rank's stream holds, and the first of its replica's tokens among them: under
  // prefill CP its CP shard of the sequence, inside an SP region its attention-TP slice.
  int64_t held_rows = local_rows, held_tokens = k.tokens[dp], first_token = 0;
  const int cp = groups.attn().cp;
  if (k.sequence_parallel) {
    held_rows = held_tokens = local_rows / ctx.topology.attn_tp;
    first_token = groups.attn().tp * held_rows;
  } else if (!k.cp_shards.empty()) {
    held_rows = held_tokens = k.cp_shards[cp];
    for (int r = 0; r < cp; ++r) first_token += k.cp_shards[r];
  } else if (k.prefill_cp) {
    first_token = cp * k.tokens[0];
  }
  // An input-scattered batch starts from the vocab-parallel embedding's TP partial.
  const float embed_weight = k.input_scattered ? weight(tp, groups.tp_rank()) : 1.f;
  Buffer embed_storage(static_cast<size_t>(held_rows * kHidden) * 4 + 4);
  const Tensor embed = embed_storage.as_tensor(DType::f32, held_rows, kHidden);
  for (int64_t i = 0; i < held_rows; ++i)
    for (int64_t c = 0; c < kHidden; ++c)
      static_cast<float*>(embed.row(i))[c] = i < held_tokens ? embed_weight * embedding(dp, first_token + i, c) : 0.f;

  std::vector<Buffer> outputs(stages.size());
  residual::start(batch);
  residual::LayerOutput h(embed);
  for (size_t s = 0; s < stages.size(); ++s) {
    const char letter = k.pattern[s];
    StageRunner& runner = *runners[s];
    // A capture copies the residual the attention read updates (borrowed values must be copied).
    std::vector<float> captured;
    int64_t captured_rows = 0;
    auto collect = [&](const Tensor& value, bool) {
      captured_rows = value.rows;
      captured.assign(static_cast<const float*>(value.data), static_cast<const float*>(value.data) + value.rows * kHidden);
    };
    std::vector<float> gathered_capture;
    auto collect_gathered = [&](const Tensor& value, bool) {
      gathered_capture.assign(static_cast<const float*>(value.data),
                              static_cast<const float*>(value.data) + value.rows * kHidden);
    };
    const bool captures = k.capture && (letter == 'A' || letter == 'M');
    const residual::ReadOptions read_options{.quant = k.fp8 && letter == 'A' ? residual::QuantFormat::fp8_per_token
                                                                             : residual::QuantFormat::none};
    const residual::StageInput read =
        captures ? runner.prepare(h, batch, PrepareOptions{.capture_output = collect,
                                                           .captured_last_layer_outputs = collect_gathered})
                 : runner.prepare(h, batch, read_options);
    Tensor in = read.values;
    // A quantised input: compute dequantises it (values times the row's scale).
    Buffer dequantised;
    if (read.quantized()) {
      dequantised = Buffer(static_cast<size_t>(in.rows * kHidden) * 4 + 4);
      const Tensor deq = dequantised.as_tensor(DType::f32, in.rows, kHidden);
      for (int64_t i = 0; i < in.rows; ++i)
        for (int64_t c = 0; c < kHidden; ++c)
          static_cast<float*>(deq.row(i))[c] =
              kernels::fp8_e4m3_to_float(static_cast<const uint8_t*>(in.row(i))[c]) * read.scales[i];
      in = deq;
    }
    if (captures) {
      if (captured_rows != held_rows) fail(name(k) + ": captured " + std::to_string(captured_rows) + " rows");
      for (int64_t i = 0; i < held_tokens; ++i) {
        const std::vector<float> expected = reference(k.pattern, dp, first_token + i, k.transform)[s];
        for (int64_t c = 0; c < kHidden; ++c)
          if (!close(captured[i * kHidden + c], expected[c]) || !close(gathered_capture[i * kHidden + c], expected[c]))
            fail(name(k) + ": capture before stage " + std::to_string(s) + " token " + std::to_string(i));
      }
    }
    const BoundPath& path = runner.stage().plan().path(variant);
    // An attention that gathers its sliced input itself (input-scattered) does so first.
    Buffer gathered;
    if (path.stage.input.gathers_itself.has(TokenAxis::ATTN_TP_SCATTER) && in.rows < local_rows) {
      gathered = Buffer(static_cast<size_t>(local_rows * kHidden) * 4 + 4);
      const Tensor full = gathered.as_tensor(DType::f32, local_rows, kHidden);
      rows::all_gather(groups, rows::GroupKind::ATTN_TP, in, full).wait();
      in = full;
    }
    outputs[s] = Buffer(static_cast<size_t>(in.rows * kHidden) * 4 + 4);
    Tensor out = outputs[s].as_tensor(DType::f32, in.rows, kHidden);
    const bool attention = letter == 'A' || letter == 'M';
    const rows::GroupKind group = attention                ? rows::GroupKind::ATTN_TP
                                  : letter == 'E'          ? rows::GroupKind::MOE_OUTPUT
                                                           : rows::GroupKind::TP;
    const bool partial = path.stage.output.group.has_value();  // else compute returns complete rows
    const float w = scale(letter) * (partial ? weight(groups.size(group), groups.rank_in(group)) : 1.f);
    for (int64_t i = 0; i < in.rows; ++i)
      for (int64_t c = 0; c < kHidden; ++c)
        static_cast<float*>(out.row(i))[c] = w * static_cast<const float*>(in.row(i))[c];
    // In an SP region the linears reduce-scatter onto the shard: a complete output, this rank's rows.
    if (k.sequence_parallel) out = rows::token_slice(groups, rows::GroupKind::ATTN_TP, out);
    if (letter == 'A') {
      h = runner.finish(out, batch);
    } else if (k.postprocess && letter != 'M') {  // no exit scope: compute completes its own sum
      if (partial) rows::all_reduce(groups, group, out).wait();
      h = runner.postprocess(out, batch);
    } else {
      StageRunner::Exit exit = runner.exit(batch);
      if (partial && !exit.flags().compute_skips_sum()) rows::all_reduce(groups, group, out).wait();
      h = exit.finish(out);
    }
  }
  const Tensor result = residual::norm(h, batch, final_norm);
  for (int64_t i = 0; i < held_tokens; ++i) {
    const std::vector<float> expected = reference(k.pattern, dp, first_token + i, k.transform, k.fp8).back();
    for (int64_t c = 0; c < kHidden; ++c) {
      const float got = static_cast<const float*>(result.row(i))[c];
      // FP8: a last-place difference before quantising may round one element to the next FP8 value.
      if (!close(got, expected[c], k.fp8 ? 2e-2f : 1e-4f))
        fail(name(k) + ": token " + std::to_string(i) +
             " col " + std::to_string(c) + " got " + std::to_string(got) + " expected " + std::to_string(expected[c]));
    }
  }
}

// LongCat's shortcut: A, then a MoE whose already-read input also feeds a prepared branch of three
// stages (F, A, F); the MoE's complete output merges with the branch's last output, so the
// residual is added exactly once. Reference: r1 = emb + 3 n(emb); x = n(r1); moe = 1.5 x;
// r2 = r1 + 2 x; r3 = r2 + 3 n(r2); out = n(r3 + 2 n(r3) + moe).
void run_longcat(const std::shared_ptr<comm::Communicator>& world, int attn_dp) {
  const int tp = world->size();
  PlanContext ctx;
  ctx.topology = Topology::make(tp, attn_dp);
  ctx.policy = ReductionPolicy::RS_RSV;
  rows::ProcessGroups groups(world, ctx.topology);
  Buffer ones_storage(kHidden * 4);
  const Tensor ones = ones_storage.as_tensor(DType::f32, 1, kHidden);
  for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(ones.data)[c] = 1.f;
  residual::RmsNorm n0(ones, 1e-6f), n1(ones, 1e-6f), unused(ones, 1e-6f), n3(ones, 1e-6f), n4(ones, 1e-6f),
      final_norm(ones, 1e-6f);

  const auto trunk = make_stages(ctx, {{declare_attn({.read = NORM_READ}), &n0}, {declare_ffn({.sparse = true}), &n1}});
  const auto branch = make_stages(ctx, {{declare_ffn(), &unused}, {declare_attn({.read = NORM_READ}), &n3}, {declare_ffn(), &n4}},
                                  {.terminal = true, .prepared_from = trunk[1].declaration()});
  const residual::StageRead& read = residual::norm_read();
  const residual::StageUpdate& add = residual::add_update();
  StageRunner attention(trunk[0], groups, n0, read, add), experts(trunk[1], groups, n1, read, add);
  StageRunner first(branch[0], groups, unused, read, add), second(branch[1], groups, n3, read, add),
      third(branch[2], groups, n4, read, add);

  residual::ForwardBatch batch;
  const int dp = groups.attn().dp;
  std::vector<int64_t> tokens(attn_dp, 4);
  batch.facts = BatchFacts::make(tokens, dp, ctx.topology.attn_tp, PaddingMode::SUM_LEN);
  const int64_t local_rows = batch.facts.local_rows();
  Buffer embed_storage(static_cast<size_t>(local_rows * kHidden) * 4);
  const Tensor embed = embed_storage.as_tensor(DType::f32, local_rows, kHidden);
  for (int64_t i = 0; i < local_rows; ++i)
    for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(embed.row(i))[c] = embedding(dp, i, c);

  // Compute: scale times the input, a partial over `group` summed by compute unless skipped.
  std::vector<Buffer> storage;
  auto compute = [&](const Tensor& in, float scale, rows::GroupKind group, bool sum) {
    storage.emplace_back(static_cast<size_t>(in.rows * kHidden) * 4 + 4);
    const Tensor out = storage.back().as_tensor(DType::f32, in.rows, kHidden);
    const float w = scale * weight(groups.size(group), groups.rank_in(group));
    for (int64_t i = 0; i < in.rows; ++i)
      for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(out.row(i))[c] = w * static_cast<const float*>(in.row(i))[c];
    if (sum) rows::all_reduce(groups, group, out).wait();
    return out;
  };

  residual::start(batch);
  residual::LayerOutput h(embed);
  h = attention.finish(compute(attention.prepare(h, batch).values, 3.f, rows::GroupKind::ATTN_TP, false), batch);
  const Tensor moe_input = experts.prepare(h, batch).values;
  // The MoE completes its own output (no exit scope) and places it on its handoff rows.
  const Tensor moe_out = experts.branch_output(compute(moe_input, 1.5f, rows::GroupKind::MOE_OUTPUT, true), batch);
  Buffer moe_keep(static_cast<size_t>(moe_out.rows * kHidden) * 4 + 4);
  const Tensor contribution = moe_keep.as_tensor(DType::f32, moe_out.rows, kHidden);
  kernels::copy(moe_out, contribution);

  const Tensor branch_in = first.branch_input(moe_input, batch);
  {
    StageRunner::Exit exit = first.exit(batch);
    h = exit.finish(compute(branch_in, 2.f, rows::GroupKind::TP, !exit.flags().compute_skips_sum()));
  }
  h = second.finish(compute(second.prepare(h, batch).values, 3.f, rows::GroupKind::ATTN_TP, false), batch);
  {
    const Tensor in = third.prepare(h, batch).values;
    StageRunner::Exit exit = third.exit(batch);
    h = exit.finish(compute(in, 2.f, rows::GroupKind::TP, !exit.flags().compute_skips_sum()));
  }
  h = experts.merge_branch(contribution, h, third, batch);
  const Tensor result = residual::norm(h, batch, final_norm);

  for (int64_t i = 0; i < tokens[dp]; ++i) {
    std::vector<float> r(kHidden), x, r2(kHidden), r3(kHidden), last(kHidden);
    for (int64_t c = 0; c < kHidden; ++c) r[c] = embedding(dp, i, c);
    const std::vector<float> a = rms_norm(r);
    for (int64_t c = 0; c < kHidden; ++c) r[c] += 3.f * a[c];
    x = rms_norm(r);
    for (int64_t c = 0; c < kHidden; ++c) r2[c] = r[c] + 2.f * x[c];
    const std::vector<float> a2 = rms_norm(r2);
    for (int64_t c = 0; c < kHidden; ++c) r3[c] = r2[c] + 3.f * a2[c];
    const std::vector<float> f3 = rms_norm(r3);
    for (int64_t c = 0; c < kHidden; ++c) last[c] = r3[c] + 2.f * f3[c] + 1.5f * x[c];
    const std::vector<float> expected = rms_norm(last);
    for (int64_t c = 0; c < kHidden; ++c)
      if (!close(static_cast<const float*>(result.row(i))[c], expected[c]))
        fail("longcat attn_dp=" + std::to_string(attn_dp) + ": token " + std::to_string(i) + " col " + std::to_string(c));
  }
}

// MHC hyper-connections (nonlinear attention update, FFN update written at the producer): two
// AF layers through the runners, against the same MhcLayer operations applied by one local stream
// on the replica's whole rows (no boundary, no collective).
void run_mhc(const std::shared_ptr<comm::Communicator>& world, int attn_dp, ReductionPolicy policy, PaddingMode padding) {
  const int tp = world->size();
  PlanContext ctx;
  ctx.topology = Topology::make(tp, attn_dp);
  if (ctx.topology.attn_tp == 1 && attn_dp > 1) {
    ctx.topology.moe_ep = attn_dp;
    ctx.topology.moe_tp = tp / attn_dp;
  }
  ctx.topology.validate();
  ctx.policy = policy;
  rows::ProcessGroups groups(world, ctx.topology);
  Buffer ones_storage(kHidden * 4);
  const Tensor ones = ones_storage.as_tensor(DType::f32, 1, kHidden);
  for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(ones.data)[c] = 1.f;
  const residual::MhcCoefficients attn_c{{0.6f, 0.4f}, {0.9f, 0.1f, 0.2f, 0.8f}, {0.5f, 0.5f}};
  const residual::MhcCoefficients ffn_c{{0.3f, 0.7f}, {0.7f, 0.3f, 0.4f, 0.6f}, {0.25f, 0.75f}};
  // One set of layers for the runners, another for the reference (the layers carry per-forward state).
  std::vector<std::unique_ptr<residual::MhcLayer>> layers, ref_layers;
  for (int l = 0; l < 2; ++l) {
    layers.push_back(std::make_unique<residual::MhcLayer>(2, attn_c, ffn_c, l == 1));
    ref_layers.push_back(std::make_unique<residual::MhcLayer>(2, attn_c, ffn_c, l == 1));
  }
  std::vector<std::unique_ptr<residual::RmsNorm>> norms;
  for (int i = 0; i < 9; ++i) norms.push_back(std::make_unique<residual::RmsNorm>(ones, 1e-6f));

  std::vector<StageSpec> specs;
  for (int l = 0; l < 2; ++l) {
    specs.push_back({declare_attn({.read = MHC_READ, .update = MHC_ATTENTION_UPDATE}), norms[2 * l].get()});
    specs.push_back({declare_ffn({.read = MHC_READ, .update = MHC_FFN_UPDATE}), norms[2 * l + 1].get()});
  }
  const auto stages = make_stages(ctx, specs, {.terminal = true});
  std::vector<std::unique_ptr<StageRunner>> runners;
  for (size_t i = 0; i < stages.size(); ++i) {
    const residual::LayerResidual ops = layers[i / 2]->residual();
    const bool attention = i % 2 == 0;
    runners.push_back(std::make_unique<StageRunner>(stages[i], groups, *norms[i], attention ? *ops.attention_read : *ops.ffn_read,
                                                    attention ? *ops.attention_update : *ops.ffn_update));
  }

  const int dp = groups.attn().dp;
  std::vector<int64_t> tokens;
  for (int d = 0; d < attn_dp; ++d) tokens.push_back(d == 1 ? 0 : 2 + 3 * d);
  residual::ForwardBatch batch;
  batch.facts = BatchFacts::make(tokens, dp, ctx.topology.attn_tp, padding);
  const int64_t local_rows = batch.facts.local_rows();
  Buffer embed_storage(static_cast<size_t>(local_rows * kHidden) * 4 + 4), ref_storage(embed_storage.bytes());
  const Tensor embed = embed_storage.as_tensor(DType::f32, local_rows, kHidden);
  const Tensor ref_embed = ref_storage.as_tensor(DType::f32, local_rows, kHidden);
  for (int64_t i = 0; i < local_rows; ++i)
    for (int64_t c = 0; c < kHidden; ++c)
      static_cast<float*>(embed.row(i))[c] = static_cast<float*>(ref_embed.row(i))[c] =
          i < tokens[dp] ? embedding(dp, i, c) : 0.f;

  std::vector<Buffer> storage;
  auto compute = [&](const Tensor& in, float scale, const rows::GroupKind* partial_over) {
    storage.emplace_back(static_cast<size_t>(in.rows * kHidden) * 4 + 4);
    const Tensor out = storage.back().as_tensor(DType::f32, in.rows, kHidden);
    const float w = scale * (partial_over ? weight(groups.size(*partial_over), groups.rank_in(*partial_over)) : 1.f);
    for (int64_t i = 0; i < in.rows; ++i)
      for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(out.row(i))[c] = w * static_cast<const float*>(in.row(i))[c];
    return out;
  };

  residual::start(batch);
  residual::LayerOutput h(embed);
  const rows::GroupKind attn_tp = rows::GroupKind::ATTN_TP, full_tp = rows::GroupKind::TP;
  for (size_t s = 0; s < stages.size(); s += 2) {
    h = runners[s]->finish(compute(runners[s]->prepare(h, batch).values, 3.f, &attn_tp), batch);
    const Tensor in = runners[s + 1]->prepare(h, batch).values;
    StageRunner::Exit exit = runners[s + 1]->exit(batch);
    const Tensor out = compute(in, 2.f, &full_tp);
    if (!exit.flags().compute_skips_sum()) rows::all_reduce(groups, full_tp, out).wait();
    h = exit.finish(out);
  }
  const Tensor result = residual::norm(h, batch, *norms[4]);

  // The reference: the same operations on one local stream over this replica's rows.
  residual::ForwardBatch ref;
  residual::start(ref);
  residual::LayerOutput r(ref_embed);
  for (int l = 0; l < 2; ++l) {
    const residual::LayerResidual ops = ref_layers[l]->residual();
    const Tensor a = compute(residual::read_input(r, ref, *ops.attention_read, *norms[5 + 2 * l]).values, 3.f, nullptr);
    r = residual::current(ref).leave(residual::ProducerOutput::complete_tensor(a), *ops.attention_update);
    const Tensor f = compute(residual::read_input(r, ref, *ops.ffn_read, *norms[6 + 2 * l]).values, 2.f, nullptr);
    r = residual::write_at_producer(ref, f, *ops.ffn_update);
  }
  const Tensor expected = residual::norm(r, ref, *norms[8]);
  for (int64_t i = 0; i < tokens[dp]; ++i)
    for (int64_t c = 0; c < kHidden; ++c)
      if (!close(static_cast<const float*>(result.row(i))[c], static_cast<const float*>(expected.row(i))[c]))
        fail("mhc attn_dp=" + std::to_string(attn_dp) + " policy=" + std::string(policy_name(policy)) + ": token " +
             std::to_string(i) + " col " + std::to_string(c));
}

}  // namespace

int main() {
  try {
    auto world = comm::Communicator::create_world();
    g_rank = world->rank();
    const int tp = world->size();
    int cases = 0;
    const ReductionPolicy policies[] = {ReductionPolicy::AR, ReductionPolicy::RS, ReductionPolicy::RSV,
                                        ReductionPolicy::RS_RSV};
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2) {
      if (tp % attn_dp) continue;
      std::vector<int64_t> tokens;
      for (int d = 0; d < attn_dp; ++d) tokens.push_back(d == 1 ? 0 : 3 + 2 * d);  // replica 1 idle
      for (bool fused : {false, true})
        for (const char* pattern : {"AFAF", "AEAE", "MMF", "MFMF"})
          for (ReductionPolicy policy : policies)
            for (PaddingMode padding : {PaddingMode::MAX_LEN, PaddingMode::SUM_LEN}) {
              run_case({pattern, attn_dp, policy, tokens, padding, false, false, fused,
                        /*capture=*/policy == ReductionPolicy::RS}, world);
              ++cases;
            }
      // An all-to-all MoE on this rank's own rows (attention-TP slices under attention TP).
      for (const char* pattern : {"AEAE", "AEAFAE"}) {
        run_case({pattern, attn_dp, ReductionPolicy::RS_RSV, tokens, PaddingMode::SUM_LEN, true}, world);
        ++cases;
      }
    }
    // Output transforms: an attention's after its sum at the next input, an FFN's at its exit (on
    // the partial before a permitted reduce-scatter).
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2)
      for (ReductionPolicy policy : policies) {
        std::vector<int64_t> tokens(attn_dp, 3);
        run_case({"AFAE", attn_dp, policy, tokens, PaddingMode::MAX_LEN, false, false, false, false, false, true}, world);
        ++cases;
      }
    // Prefill CP (DSA/MLA style, equal shards): the FFN input gathers over CP, the exit returns
    // to the shard with an attention-CP reduce-scatter (rs) or a take-back after compute's sum (ar).
    if (tp > 1)
      for (ReductionPolicy policy : {ReductionPolicy::AR, ReductionPolicy::RS})
        for (const char* pattern : {"AFAF", "AFMF"}) {
          run_case({pattern, 1, policy, {3}, PaddingMode::MAX_LEN, false, false, false, false, true}, world);
          ++cases;
        }
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2) {
      run_longcat(world, attn_dp);
      ++cases;
    }
    // FP8 attention input: on its own rows, and gathered (values and scales) after an a2a MoE.
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2) {
      std::vector<int64_t> tokens(attn_dp, 3);
      for (bool a2a : {false, true}) {
        Case fp8{"AEAE", attn_dp, ReductionPolicy::RS_RSV, tokens, PaddingMode::SUM_LEN, a2a};
        fp8.fp8 = true;
        run_case(fp8, world);
        ++cases;
      }
    }
    // Operation-scheduled TBO: FFNs without exit scopes, postprocess only moves rows back.
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2) {
      std::vector<int64_t> tokens(attn_dp, 2);
      tokens[0] = 5;
      run_case({"AFAE", attn_dp, ReductionPolicy::RS_RSV, tokens, PaddingMode::SUM_LEN, false, false, false, false, false,
                false, false, {}, true},
               world);
      ++cases;
    }
    // GQA prefill CP: uneven shards (one may be empty), padded for the gather; the exit takes this
    // rank's block back after compute's all-reduce.
    if (tp > 1) {
      std::vector<int64_t> shards = {3, 1, 2, 0};
      shards.resize(tp);
      int64_t total = 0;
      for (int64_t n : shards) total += n;
      for (const char* pattern : {"AFAF", "AFMF"}) {
        run_case({pattern, 1, ReductionPolicy::RS_RSV, {total}, PaddingMode::MAX_LEN, false, false, false, false, true,
                  false, false, shards},
                 world);
        ++cases;
      }
    }
    // A LayerNorm-SP region: boundaries stay on the shard (add + norm only, no collective).
    if (tp > 1)
      for (const char* pattern : {"AFAF", "AEAE"}) {
        run_case({pattern, 1, ReductionPolicy::RS_RSV, {4 * tp}, PaddingMode::MAX_LEN, false, false, false, false, false,
                  false, true},
                 world);
        ++cases;
      }
    // MHC: nonlinear updates read after the sum and replicate under DP; the FFN writes its streams.
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2)
      for (ReductionPolicy policy : policies)
        for (PaddingMode padding : {PaddingMode::MAX_LEN, PaddingMode::SUM_LEN}) {
          run_mhc(world, attn_dp, policy, padding);
          ++cases;
        }
    // Input-scattered attention: the embedding and every FFN leave a TP partial for the next
    // attention's TP reduce-scatter; the FFN's residual joins its input sum on the slices.
    if (tp > 1)
      for (ReductionPolicy policy : policies) {
        run_case({"AFAF", 1, policy, {4 * tp + 1}, PaddingMode::MAX_LEN, false, true}, world);
        ++cases;
      }
    if (g_rank == 0) std::printf("test_stage_runner: %d stacks on %d ranks match the reference\n", cases, tp);
    return 0;
  } catch (const std::exception& e) {
    fail(e.what());
  }
}
