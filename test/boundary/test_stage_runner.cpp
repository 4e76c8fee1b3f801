// StageRunner on real processes (run under mpirun with tp ranks): small decoder stacks executed
// through the bound paths — prepare, PARTIAL finish, exit scopes, the final norm — for every
// attention-DP split of the world and every policy, with uneven (and idle) DP replicas, MAX_LEN
// and SUM_LEN padding. Each rank's final output is compared with a single-process reference
// (no parallelism) for its replica's tokens.
//
//   mpirun -n 4 test_stage_runner
#include <cstdint>
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/boundary/factories.h"
#include "runtime/boundary/rows/host_fusion.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/rows/tp_moves.h"
#include "runtime/boundary/runner.h"
#include "runtime/residual/add_norm.h"
#include "test/boundary/runner_harness.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::runner_test;

namespace {

struct Case {
  std::string pattern;
  int attn_dp = 1;
  ReductionPolicy policy = ReductionPolicy::RS_RSV;
  std::vector<int64_t> tokens = {};
  PaddingMode padding = PaddingMode::MAX_LEN;
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
  bool fold = false;             ///< every attention's output is folded into the residual (a written stream)
  bool written_entry = false;    ///< the stack starts from a written stream of the complete embedding
  bool fresh_residual = false;   ///< FFN inputs fused into fresh residual storage, certifying captures
};

std::string name(const Case& k) {
  return k.pattern + " attn_dp=" + std::to_string(k.attn_dp) + " policy=" + std::string(policy_name(k.policy)) +
         " padding=" + (k.padding == PaddingMode::MAX_LEN ? "MAX_LEN" : "SUM_LEN") + (k.a2a ? " a2a" : "") +
         (k.input_scattered ? " input-scattered" : "") + (k.fused ? " fused" : "") + (k.capture ? " capture" : "") + (k.prefill_cp ? " prefill-cp" : "") + (k.transform ? " transform" : "") +
         (k.sequence_parallel ? " sequence-parallel" : "") + (k.cp_shards.empty() ? "" : " gqa-cp") +
         (k.postprocess ? " postprocess" : "") + (k.fp8 ? " fp8" : "") + (k.fold ? " fold" : "") +
         (k.written_entry ? " written-entry" : "") + (k.fresh_residual ? " fresh-residual" : "");
}

// Seam's host fused FFN input run on a copy of the residual in the candidate's own storage: the
// residual it was handed stays untouched, so the producing attention's capture may keep it (§4.4).
// It declines only for an empty batch, which its certificate excludes.
class FreshResidualFusion : public FusionProvider {
 public:
  explicit FreshResidualFusion(rows::ProcessGroups& groups) : host_(groups) {}
  std::vector<FusedMlpInput> ffn_input(const StagePlan& plan) const override {
    std::vector<FusedMlpInput> candidates = host_.ffn_input(plan);
    for (FusedMlpInput& candidate : candidates) {
      auto storage = std::make_shared<Buffer>();
      candidate.run = [run = candidate.run, storage](const FusionArgs& args) -> std::optional<FusedRead> {
        if (args.partial.rows == 0) return std::nullopt;
        if (storage->bytes() < args.residual.bytes()) *storage = Buffer(args.residual.bytes());
        FusionArgs on_copy = args;
        const Tensor& residual = args.residual;
        on_copy.residual = Tensor::contiguous(storage->data(), residual.dtype, residual.rows, residual.cols);
        kernels::copy(residual, on_copy.residual);
        return run(on_copy);
      };
      candidate.preserves_residual = [](const BatchFacts& batch) { return batch.has_tokens(); };
    }
    return candidates;
  }

 private:
  rows::HostAllReduceNormFusion host_;
};

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
  ctx.topology = k.prefill_cp ? Topology::make(tp, k.attn_dp, tp / k.attn_dp) : Topology::make(tp, k.attn_dp);
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
  std::shared_ptr<const FusionProvider> fusions;
  if (k.fused) fusions = std::make_shared<rows::HostAllReduceNormFusion>(groups);
  if (k.fresh_residual) fusions = std::make_shared<FreshResidualFusion>(groups);

  // One norm per stage plus the final norm, weights one.
  const Ones ones_weight;
  const Tensor& ones = ones_weight.tensor;
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
  batch.facts = BatchFacts::make(k.tokens, dp, ctx.topology.attn_tp, k.padding, variant).with_cp_shards(k.cp_shards, ctx.topology.attn_cp);
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
  // An input-scattered batch starts from the vocab-parallel embedding's TP partial (unless the
  // model wrote the complete embedding into the stream itself).
  const float embed_weight = k.input_scattered && !k.written_entry ? weight(tp, groups.tp_rank()) : 1.f;
  Buffer embed_storage(static_cast<size_t>(held_rows * kHidden) * 4 + 4);
  const Tensor embed = embed_storage.as_tensor(DType::f32, held_rows, kHidden);
  for (int64_t i = 0; i < held_rows; ++i)
    for (int64_t c = 0; c < kHidden; ++c)
      static_cast<float*>(embed.row(i))[c] = i < held_tokens ? embed_weight * embedding(dp, first_token + i, c) : 0.f;

  std::vector<Buffer> outputs(stages.size());
  // Captures passed as owned are kept uncopied (as a collector would) and checked after the stack:
  // nothing may write them for the rest of the forward.
  struct KeptCapture {
    size_t stage;
    Tensor view;
    std::vector<float> values;
  };
  std::vector<KeptCapture> kept;
  residual::start(batch);
  residual::LayerOutput h = k.written_entry ? residual::written(embed, batch) : residual::LayerOutput(embed);
  for (size_t s = 0; s < stages.size(); ++s) {
    const char letter = k.pattern[s];
    StageRunner& runner = *runners[s];
    const BoundPath& path = runner.stage().plan().path(variant);
    // Captures owned because a gather filled them (§4.4): the move back to the producer's rows and
    // the input's attention-TP gather. That storage serves only the capture, so the collector marks
    // it while prepare runs (nothing may write it, not even with equal values), then restores it.
    const bool output_gathers = path.entry.capture_moves && path.entry.capture_move_allocates;
    const bool input_gathers = path.entry.input_move == InputMove::ATTN_TP_GATHER;
    constexpr float kMark = -1234.5f;
    std::vector<KeptCapture> marked;
    auto mark = [&](const Tensor& value, const std::vector<float>& values) {
      std::fill_n(static_cast<float*>(value.data), value.rows * kHidden, kMark);
      marked.push_back({s, value, values});
    };
    // A capture copies the residual the attention read updates (borrowed values must be copied).
    std::vector<float> captured;
    int64_t captured_rows = 0, gathered_rows = 0;
    bool captured_owned = false, gathered_owned = false;
    auto collect = [&](const Tensor& value, bool owned) {
      captured_rows = value.rows;
      captured.assign(static_cast<const float*>(value.data), static_cast<const float*>(value.data) + value.rows * kHidden);
      captured_owned = owned;
      if (owned) kept.push_back({s, value, captured});
      if (owned && output_gathers) mark(value, captured);
    };
    std::vector<float> gathered_capture;
    auto collect_gathered = [&](const Tensor& value, bool owned) {
      gathered_rows = value.rows;
      gathered_capture.assign(static_cast<const float*>(value.data),
                              static_cast<const float*>(value.data) + value.rows * kHidden);
      gathered_owned = owned;
      if (owned) kept.push_back({s, value, gathered_capture});
      if (owned && input_gathers) mark(value, gathered_capture);
    };
    const bool captures = k.capture && (letter == 'A' || letter == 'M');
    const residual::ReadOptions read_options{.quant = k.fp8 && letter == 'A' ? residual::QuantFormat::fp8_per_token
                                                                             : residual::QuantFormat::none};
    const residual::StageInput read =
        captures ? runner.prepare(h, batch, PrepareOptions{.capture_output = collect,
                                                           .captured_last_layer_outputs = collect_gathered})
                 : runner.prepare(h, batch, read_options);
    for (const KeptCapture& c : marked) {
      for (int64_t i = 0; i < c.view.rows * kHidden; ++i)
        if (static_cast<const float*>(c.view.data)[i] != kMark)
          fail(name(k) + ": prepare before stage " + std::to_string(s) + " wrote an owned capture it had handed out");
      std::copy(c.values.begin(), c.values.end(), static_cast<float*>(c.view.data));
    }
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
      // The input's capture is on the compute input's rows: this rank's attention-TP slice where an
      // input-scattered attention gathers its input itself.
      const int64_t first_gathered = gathered_rows == held_rows ? 0 : groups.attn().tp * gathered_rows;
      for (int64_t i = 0; i < held_tokens; ++i) {
        const std::vector<float> expected = reference(k.pattern, dp, first_token + i, k.transform)[s];
        const int64_t g = i - first_gathered;
        for (int64_t c = 0; c < kHidden; ++c)
          if (!close(captured[i * kHidden + c], expected[c]) ||
              (g >= 0 && g < gathered_rows && !close(gathered_capture[g * kHidden + c], expected[c])))
            fail(name(k) + ": capture before stage " + std::to_string(s) + " token " + std::to_string(i));
      }
      if ((output_gathers && s > 0 && !captured_owned) || (input_gathers && !gathered_owned))
        fail(name(k) + ": a gathered capture before stage " + std::to_string(s) + " was not owned");
      // Certified where the following FFN's fused input completes the attention-TP sum on the rows
      // the residual holds (no DP gather) and nothing moves the capture; at the stack's entry the
      // capture runs before the read and borrows the output.
      const bool certified =
          s + 1 < stages.size() && k.pattern[s + 1] == 'F' && ctx.topology.attn_tp > 1 && k.attn_dp == 1;
      if (k.fresh_residual && (captured_owned != (certified && s > 0) || gathered_owned != certified))
        fail(name(k) + ": capture before stage " + std::to_string(s) + " owned " + std::to_string(captured_owned) +
             "/" + std::to_string(gathered_owned));
    }
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
      if (k.fold) h = residual::fold(h, batch);
    } else if (k.postprocess && letter != 'M') {  // no exit scope: compute completes its own sum
      if (partial) rows::all_reduce(groups, group, out).wait();
      h = runner.postprocess(out, batch);
    } else {
      StageRunner::Exit exit = runner.exit(batch);
      if (partial && !exit.flags().compute_skips_sum()) rows::all_reduce(groups, group, out).wait();
      h = exit.finish(out);
    }
  }
  std::vector<float> final_residual;
  auto keep_residual = [&](const Tensor& value, bool) {
    for (int64_t i = 0; i < value.rows; ++i)
      final_residual.insert(final_residual.end(), static_cast<const float*>(value.row(i)),
                            static_cast<const float*>(value.row(i)) + kHidden);
  };
  const Tensor result = residual::norm(h, batch, final_norm, {.capture = keep_residual});
  for (const KeptCapture& c : kept)
    for (int64_t i = 0; i < c.view.rows * kHidden; ++i)
      if (static_cast<const float*>(c.view.data)[i] != c.values[static_cast<size_t>(i)])
        fail(name(k) + ": the owned capture before stage " + std::to_string(c.stage) + " was overwritten");
  for (int64_t i = 0; i < held_tokens; ++i) {
    const std::vector<std::vector<float>> ref = reference(k.pattern, dp, first_token + i, k.transform, k.fp8);
    const std::vector<float>& expected = ref.back();
    const std::vector<float>& expected_residual = ref[ref.size() - 2];
    for (int64_t c = 0; c < kHidden; ++c) {
      const float got = static_cast<const float*>(result.row(i))[c];
      const float got_residual = final_residual[static_cast<size_t>(i * kHidden + c)];
      // FP8: a last-place difference before quantising may round one element to the next FP8 value.
      const float tolerance = k.fp8 ? 2e-2f : 1e-4f;
      if (!close(got, expected[c], tolerance))
        fail(name(k) + ": token " + std::to_string(i) +
             " col " + std::to_string(c) + " got " + std::to_string(got) + " expected " + std::to_string(expected[c]));
      if (!close(got_residual, expected_residual[c], tolerance))
        fail(name(k) + ": final residual of token " + std::to_string(i) + " col " + std::to_string(c) + " got " +
             std::to_string(got_residual) + " expected " + std::to_string(expected_residual[c]));
    }
  }
}

// An input that owes its sum by construction must arrive with that declared sum, not with a
// completion an exit chose (needs attention TP > 1, so more than one rank).
void check_declared_input_misuse(const std::shared_ptr<comm::Communicator>& world) {
  PlanContext ctx;
  ctx.topology = Topology::make(world->size());
  rows::ProcessGroups groups(world, ctx.topology);
  const Ones ones;
  residual::RmsNorm norm(ones.tensor, 1e-6f);
  const auto stages = make_stages(ctx, {{declare_attn({.read = NORM_READ}), &norm}, {declare_ffn(), &norm}});
  StageRunner ffn(stages[1], groups, norm, residual::norm_read(), residual::add_update());
  Buffer storage(2 * kHidden * 4);
  const Tensor rows = storage.as_tensor(DType::f32, 1, kHidden);
  const Tensor residual = storage.as_tensor(DType::f32, 2, kHidden).slice_rows(1, 1);
  residual::ForwardBatch batch;
  const int64_t tokens[] = {1};
  batch.facts = BatchFacts::make(tokens, 0, 1, PaddingMode::MAX_LEN);
  auto same = [](const Tensor& t, residual::ForwardBatch&) { return t; };
  residual::arrive(batch, rows, &residual, residual::add_update());  // Pending, complete
  batch.residual_stream->write(residual);
  const residual::LayerOutput carried = batch.residual_stream->leave(
      residual::ProducerOutput::unreduced(rows, SumGroup::ATTN_TP, residual::CompleteSum(same)), residual::add_update());
  try {
    ffn.prepare(carried, batch);
    fail("a carried completion was accepted where the input declares its sum");
  } catch (const UsageError& e) {
    if (std::string(e.what()) != "a declared input sum carried another completion") fail(e.what());
  }
}

// Interleaved microbatches (each on its own stream) sharing one stage runner: the runner refuses the
// second while its buffers still hold the first's values (here the MoE input's residual slice)
// rather than overwriting them.
void check_interleaved_microbatches_misuse(const std::shared_ptr<comm::Communicator>& world) {
  const int tp = world->size();
  PlanContext ctx;
  ctx.topology = Topology::make(tp);
  ctx.topology.moe_a2a_backend = true;
  ctx.topology.moe_ep = tp;
  ctx.topology.moe_tp = 1;
  ctx.topology.validate();
  rows::ProcessGroups groups(world, ctx.topology);
  const Ones ones;
  residual::RmsNorm attn_norm(ones.tensor, 1e-6f), ffn_norm(ones.tensor, 1e-6f);
  const auto stages = make_stages(
      ctx, {{declare_attn({.read = NORM_READ}), &attn_norm}, {declare_ffn({.sparse = true}), &ffn_norm}}, {.terminal = true});
  StageRunner attention(stages[0], groups, attn_norm, residual::norm_read(), residual::add_update());
  StageRunner experts(stages[1], groups, ffn_norm, residual::norm_read(), residual::add_update());
  const int64_t tokens[] = {tp};
  residual::ForwardBatch microbatches[2];
  std::vector<Buffer> storage;
  residual::LayerOutput h[2];
  for (int m = 0; m < 2; ++m) {
    microbatches[m].facts = BatchFacts::make(tokens, 0, tp, PaddingMode::MAX_LEN);
    storage.emplace_back(static_cast<size_t>(2 * tp * kHidden) * 4);
    const Tensor embed = storage.back().as_tensor(DType::f32, tp, kHidden);
    const Tensor out = storage.back().as_tensor(DType::f32, 2 * tp, kHidden).slice_rows(tp, tp);
    for (int64_t i = 0; i < tp * kHidden; ++i) static_cast<float*>(embed.data)[i] = 1.f + static_cast<float>(m);
    residual::start(microbatches[m]);
    const Tensor in = attention.prepare(residual::LayerOutput(embed), microbatches[m]).values;
    kernels::copy(in, out);
    h[m] = attention.finish(out, microbatches[m]);
  }
  experts.prepare(h[0], microbatches[0]);
  try {
    experts.prepare(h[1], microbatches[1]);
    fail("a second live microbatch was accepted by a runner holding the first's values");
  } catch (const UsageError& e) {
    if (std::string(e.what()) !=
        "a stage runner's buffers still hold another live stream's values: interleaved microbatches need a stage "
        "runner each")
      fail(e.what());
  }
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
              run_case({.pattern = pattern, .attn_dp = attn_dp, .policy = policy, .tokens = tokens,
                        .padding = padding, .fused = fused, .capture = policy == ReductionPolicy::RS},
                       world);
              ++cases;
            }
      // An all-to-all MoE on this rank's own rows (attention-TP slices under attention TP).
      for (const char* pattern : {"AEAE", "AEAFAE"}) {
        run_case({.pattern = pattern, .attn_dp = attn_dp, .tokens = tokens, .padding = PaddingMode::SUM_LEN, .a2a = true},
                 world);
        ++cases;
      }
    }
    // Output transforms: an attention's after its sum at the next input, an FFN's at its exit (on
    // the partial before a permitted reduce-scatter).
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2)
      for (ReductionPolicy policy : policies) {
        std::vector<int64_t> tokens(attn_dp, 3);
        run_case({.pattern = "AFAE", .attn_dp = attn_dp, .policy = policy, .tokens = tokens, .transform = true}, world);
        ++cases;
      }
    // Prefill CP (DSA/MLA style, equal shards): the FFN input gathers over CP, the exit returns
    // to the shard with an attention-CP reduce-scatter (rs) or a take-back after compute's sum (ar).
    if (tp > 1)
      for (ReductionPolicy policy : {ReductionPolicy::AR, ReductionPolicy::RS})
        for (const char* pattern : {"AFAF", "AFMF"}) {
          run_case({.pattern = pattern, .policy = policy, .tokens = {3}, .prefill_cp = true}, world);
          ++cases;
        }
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2) {
      run_longcat(world, attn_dp);
      ++cases;
    }
    // LongCat with an all-to-all MoE: the prepared branch's input moves from the MoE's local rows
    // (attention-TP slices) to the dense branch's DP-gathered rows (move_rows' DP gather), under
    // MAX_LEN padding (uneven replicas) and SUM_LEN; at 4 ranks attn_dp=2 gives attention TP 2.
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2)
      for (PaddingMode padding : {PaddingMode::MAX_LEN, PaddingMode::SUM_LEN}) {
        run_longcat(world, attn_dp, padding, /*a2a=*/true);
        ++cases;
      }
    // FP8 attention input: on its own rows, and gathered (values and scales) after an a2a MoE.
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2) {
      std::vector<int64_t> tokens(attn_dp, 3);
      for (bool a2a : {false, true}) {
        run_case({.pattern = "AEAE", .attn_dp = attn_dp, .tokens = tokens, .padding = PaddingMode::SUM_LEN, .a2a = a2a,
                  .fp8 = true},
                 world);
        ++cases;
      }
    }
    // Operation-scheduled TBO: FFNs without exit scopes, postprocess only moves rows back.
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2) {
      std::vector<int64_t> tokens(attn_dp, 2);
      tokens[0] = 5;
      run_case({.pattern = "AFAE", .attn_dp = attn_dp, .tokens = tokens, .padding = PaddingMode::SUM_LEN,
                .postprocess = true},
               world);
      ++cases;
    }
    // A written stream where the input declares a sum: the read takes the complete residual and
    // sums nothing again (fold() after the attention; a stack entered from a written embedding).
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2) {
      std::vector<int64_t> tokens(attn_dp, 3);
      for (bool a2a : {false, true}) {
        run_case({.pattern = "AFAE", .attn_dp = attn_dp, .tokens = tokens, .padding = PaddingMode::SUM_LEN, .a2a = a2a,
                  .fold = true},
                 world);
        ++cases;
      }
    }
    run_case({.pattern = "AFAF", .tokens = {5}, .written_entry = true}, world);
    ++cases;
    // A capture kept uncopied where the following FFN's fused input certifies a fresh residual.
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2) {
      run_case({.pattern = "AFAF", .attn_dp = attn_dp, .tokens = std::vector<int64_t>(attn_dp, 5), .capture = true,
                .fresh_residual = true},
               world);
      ++cases;
    }
    // Consecutive attentions on an input-scattered batch: the second reads on the residual's slice
    // and gathers its input back (§2.7 C1), so both of its captures gather and both are owned.
    if (tp > 1)
      for (ReductionPolicy policy : policies) {
        run_case({.pattern = "AAFAAF", .policy = policy, .tokens = {4 * tp + 1}, .input_scattered = true, .capture = true},
                 world);
        ++cases;
      }
    // Operation-scheduled TBO under prefill CP: postprocess takes this rank's shard of the reduced
    // output back, never reduce-scatters it again.
    if (tp > 1)
      for (ReductionPolicy policy : {ReductionPolicy::AR, ReductionPolicy::RS}) {
        run_case({.pattern = "AFAF", .policy = policy, .tokens = {3}, .prefill_cp = true, .postprocess = true}, world);
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
        run_case({.pattern = pattern, .tokens = {total}, .prefill_cp = true, .cp_shards = shards}, world);
        ++cases;
      }
    }
    // Attention DP x prefill CP: the FFN's DP gather places every CP shard in its replica's slot,
    // the exit takes this rank's shard back (uneven shards, an idle one).
    if (tp >= 4)
      for (const char* pattern : {"AFAF", "MFAE"}) {
        run_case({.pattern = pattern, .attn_dp = 2, .tokens = {4, 4}, .prefill_cp = true, .cp_shards = {3, 1}}, world);
        run_case({.pattern = pattern, .attn_dp = 2, .tokens = {2, 2}, .prefill_cp = true, .cp_shards = {0, 2}}, world);
        cases += 2;
      }
    // A LayerNorm-SP region: boundaries stay on the shard (add + norm only, no collective).
    if (tp > 1)
      for (const char* pattern : {"AFAF", "AEAE"}) {
        run_case({.pattern = pattern, .tokens = {4 * tp}, .sequence_parallel = true}, world);
        ++cases;
      }
    // MHC: nonlinear updates read after the sum and replicate under DP; the FFN writes its streams.
    for (int attn_dp = 1; attn_dp <= tp; attn_dp *= 2)
      for (ReductionPolicy policy : policies)
        for (PaddingMode padding : {PaddingMode::MAX_LEN, PaddingMode::SUM_LEN}) {
          run_mhc(world, attn_dp, policy, padding);
          ++cases;
        }
    // MHC on an input-scattered batch (its streams stay on TP slices) and beside a dense FFN on
    // local rows: the last FFN writes its streams on the slice and gathers them back.
    if (tp > 1) {
      for (ReductionPolicy policy : policies) {
        run_mhc(world, 1, policy, PaddingMode::MAX_LEN, /*input_scattered=*/true);
        ++cases;
      }
      run_mhc(world, 1, ReductionPolicy::RS_RSV, PaddingMode::MAX_LEN, false, /*dense_tp=*/1);
      ++cases;
    }
    // Input-scattered attention: the embedding and every FFN leave a TP partial for the next
    // attention's TP reduce-scatter; the FFN's residual joins its input sum on the slices. Also
    // entered from a written embedding, whose declared sum the read must not take again.
    if (tp > 1)
      for (ReductionPolicy policy : policies)
        for (bool written_entry : {false, true}) {
          run_case({.pattern = "AFAF", .policy = policy, .tokens = {4 * tp + 1}, .input_scattered = true,
                    .written_entry = written_entry},
                   world);
          ++cases;
        }
    if (tp > 1) check_declared_input_misuse(world);
    if (tp > 1) check_interleaved_microbatches_misuse(world);
    if (g_rank == 0) std::printf("test_stage_runner: %d stacks on %d ranks match the reference\n", cases, tp);
    return 0;
  } catch (const std::exception& e) {
    fail(e.what());
  }
}
