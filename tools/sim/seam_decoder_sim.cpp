// seam_decoder_sim: runs an L-stage decoder stack with deterministic random weights on tp * pp
// ranks through Seam's stage boundaries and row moves, and compares every rank's final output and
// residual with a single-process, no-parallelism reference computed in the same binary. Prints the
// plan, the collectives each pipeline stage executed and the bytes they moved; exits non-zero on
// any mismatch.
//
//   mpirun -n 4 seam_decoder_sim --pattern AF --layers 2 --tp 4 --attn-dp 2 --policy rs+rsv --tokens 5,0
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <numeric>
#include <string>
#include <vector>

#include "seam/errors.h"
#include "runtime/boundary/policy.h"
#include "seam/communicator.h"
#include "tools/common/cli.h"
#include "tools/sim/compare.h"
#include "tools/sim/driver.h"
#include "tools/sim/reference.h"
#include "tools/sim/sim_args.h"
#include "tools/sim/sim_device.h"
#include "tools/sim/token_rows.h"

using namespace seam;
using namespace seam::sim;
using boundary::rows::ProcessGroups;

namespace {

Topology topology_of(const SimArgs& a) {
  Topology t = Topology::make(a.tp, a.attn_dp, a.attn_cp);
  // By default experts are sharded over every TP rank (pure EP): RSv applies when attn_tp == 1.
  t.moe_ep = a.moe_ep > 0 ? a.moe_ep : a.tp;
  t.moe_tp = a.tp / t.moe_ep;
  t.pp = a.pp;
  t.moe_dense_tp = a.dense_tp;
  t.attn_tp_input_scattered = a.input_scattered;
  t.dp_gatherv = a.dp_gatherv;
  t.enable_prefill_cp = a.attn_cp > 1;
  t.cp_over_attn_cp = a.attn_cp > 1 && !a.gqa_cp;
  t.moe_cp_all_gather = a.gqa_cp;
  // Two-batch overlap is part of the plan: a dense FFN before the split hands on attention rows
  // under fully data-parallel dense FFNs (TBO_SPLIT, §3.5).
  t.two_batch_overlap = a.microbatches == 2;
  t.validate();
  return t;
}

boundary::PlanContext context_of(const SimArgs& a) {
  const auto requested = boundary::parse_policy(a.policy);
  if (!requested) throw ValueError("unknown --policy " + a.policy);
  boundary::ModelFacts dummy;
  dummy.dummy = true;  // the simulator's model resolves `auto` like a dummy checkpoint
  return {topology_of(a), boundary::PolicyRegistry::with_defaults().resolve(*requested, dummy)};
}

ModelConfig model_of(const SimArgs& a) {
  ModelConfig m;
  m.stages = a.stages();
  m.hidden = a.hidden;
  m.ffn_hidden = 24 * a.tp;
  m.experts = 2 * a.tp;
  m.seed = a.seed;
  m.dtype = a.dtype;
  return m;
}

BatchVariant variant_of(const SimArgs& a) {
  return select_batch_variant({.input_scattered = a.input_scattered, .shards_over_cp = a.attn_cp > 1 && !a.cp_decode});
}

// Every pipeline stage's plan, as its ranks bind it, and where two-batch overlap splits it.
void print_plan(const Model& model, const boundary::PlanContext& ctx, const SimArgs& a) {
  for (int r = 0; r < a.pp; ++r) {
    SimStack stack(model, ctx, a.pp, r, nullptr);
    if (a.pp > 1) std::printf("# pipeline stage %d\n", r);
    for (const std::string& line : stack.describe()) std::printf("%s\n", line.c_str());
    if (a.microbatches == 2)
      std::printf("# %s\n", tbo_split(stack, ctx.topology, variant_of(a)).description.c_str());
  }
}

// The traffic table of every rank, gathered to all ranks (one row of doubles per rank).
std::vector<double> gather_traffic(comm::Communicator& world, const boundary::rows::Traffic& traffic) {
  using namespace boundary::rows;
  std::vector<double> mine;
  for (int g = 0; g < kGroupKindCount; ++g)
    for (int k = 0; k < kCollectiveKindCount; ++k) {
      const auto& c = traffic.count(static_cast<GroupKind>(g), static_cast<CollectiveKind>(k));
      mine.push_back(static_cast<double>(c.calls));
      mine.push_back(static_cast<double>(c.bytes));
    }
  std::vector<double> all(mine.size() * static_cast<size_t>(world.size()));
  world.all_gather(mine.data(), all.data(), mine.size(), DType::f64).wait();
  return all;
}

// One table per run of consecutive ranks that executed the same collectives.
void print_traffic(const std::vector<double>& all, int world_size) {
  using namespace boundary::rows;
  const size_t per_rank = all.size() / static_cast<size_t>(world_size);
  auto table = [&](int rank) {
    std::string lines;
    size_t i = per_rank * static_cast<size_t>(rank);
    for (int g = 0; g < kGroupKindCount; ++g)
      for (int k = 0; k < kCollectiveKindCount; ++k, i += 2) {
        if (all[i] == 0) continue;
        char line[128];
        std::snprintf(line, sizeof line, "#   %-10s %-16s %4.0f calls %10.0f bytes\n",
                      std::string(group_kind_name(static_cast<GroupKind>(g))).c_str(),
                      std::string(collective_kind_name(static_cast<CollectiveKind>(k))).c_str(), all[i], all[i + 1]);
        lines += line;
      }
    return lines.empty() ? std::string("#   none\n") : lines;
  };
  for (int first = 0; first < world_size;) {
    const std::string lines = table(first);
    int last = first;
    while (last + 1 < world_size && table(last + 1) == lines) ++last;
    if (first == last)
      std::printf("# collectives executed by rank %d:\n%s", first, lines.c_str());
    else
      std::printf("# collectives executed by each of ranks %d-%d:\n%s", first, last, lines.c_str());
    first = last + 1;
  }
}

// Compares this rank's captures, output and residual with the reference. `seen` gets, per token,
// whether its output row (first `total` entries) and its residual row (the rest) were compared.
Comparison check(const ForwardOutput& out, const ReferenceOutput& ref, Tolerance tol, std::vector<double>& seen) {
  Comparison c;
  for (const CapturedResidual& captured : out.captures) {
    Comparison k = compare_rows(captured.value.view, ref.stage_residuals[static_cast<size_t>(captured.stage)].view,
                                captured.token_ids, tol);
    if (!k.first_mismatch.empty()) k.first_mismatch = "capture at stage " + std::to_string(captured.stage) + " " + k.first_mismatch;
    c.merge(k);
  }
  if (!out.has_output) return c;
  const Comparison o = compare_rows(out.output.view, ref.output, out.token_ids, tol);
  Comparison r = compare_rows(out.residual.view, ref.residual, out.token_ids, tol);
  if (!r.first_mismatch.empty()) r.first_mismatch = "residual " + r.first_mismatch;
  const size_t total = seen.size() / 2;
  for (int64_t token : o.tokens) seen[static_cast<size_t>(token)] = 1;
  for (int64_t token : r.tokens) seen[total + static_cast<size_t>(token)] = 1;
  c.merge(o);
  c.merge(r);
  return c;
}

// How many of the batch's tokens some rank compared, output and residual rows both: every token
// must be, or a run that compared nothing (no output anywhere, rows cut short) would pass.
int64_t tokens_compared(comm::Communicator& world, std::vector<double>& seen) {
  world.all_reduce(seen.data(), seen.data(), seen.size(), DType::f64, ReduceOp::max).wait();
  const size_t total = seen.size() / 2;
  int64_t both = 0;
  for (size_t t = 0; t < total; ++t) both += seen[t] == 1 && seen[total + t] == 1;
  return both;
}

// The single-process reference. A bf16 run on host memory puts its partials and embeddings on a
// grid where every sum is exact, so that it is compared bit for bit (a vocab-parallel embedding's
// tp shares stay exact: parse_sim_args takes a power-of-two tp only). On the device the norms'
// kernels sum their squares in another order than the host's: those runs keep the bf16 tolerance.
ReferenceOutput reference_of(const SimArgs& a, Model& model, int64_t tokens, const StageShards& shards) {
  if (a.dtype != DType::bf16 || a.cuda) return run_reference(model, tokens, shards);
  return run_reference_on_exact_grid(model, tokens, shards, a.input_scattered ? a.tp : 1);
}

// Exit status of a run that cannot take place here (CTest's SKIP_RETURN_CODE).
constexpr int kSkipped = 77;

int run(int argc, char** argv) {
  const SimArgs args = parse_sim_args(argc, argv);
  if (args.cuda) {
    if (const std::string why = SimDevice::unavailable(); !why.empty()) {
      std::fprintf(stderr, "seam_decoder_sim: skipped: --device cuda: %s\n", why.c_str());
      return kSkipped;
    }
  }
  auto world = comm::Communicator::create_world();
  if (world->size() != args.tp * args.pp)
    throw ValueError("run under mpirun with tp * pp = " + std::to_string(args.tp * args.pp) + " ranks, not " +
                     std::to_string(world->size()));
  const boundary::PlanContext ctx = context_of(args);
  ProcessGroups groups(world, ctx.topology);
  Model model(model_of(args));
  const int64_t total = std::accumulate(args.tokens.begin(), args.tokens.end(), int64_t{0});
  const ReferenceOutput ref = reference_of(args, model, total, stage_shards(ctx.topology));
  const bool lead = world->rank() == 0;
  if (lead && !args.quiet) {
    std::printf("# seam_decoder_sim: stages %s  %s  policy %s  tokens", model.config().stages.c_str(),
                ctx.topology.describe().c_str(), std::string(boundary::policy_name(ctx.policy)).c_str());
    for (int64_t t : args.tokens) std::printf(" %lld", static_cast<long long>(t));
    std::printf("  padding %s  %s batch  microbatches %d  dtype %s  hidden %lld  fusion %s  capture %s  device %s\n",
                args.padding_mode() == PaddingMode::MAX_LEN ? "MAX_LEN" : "SUM_LEN",
                std::string(batch_variant_name(variant_of(args))).c_str(),
                args.microbatches,
                args.dtype == DType::bf16 ? "bf16" : "fp32", static_cast<long long>(args.hidden), args.fusion ? (args.cuda ? "device" : "host") : "off",
                args.capture ? "on" : "off", args.cuda ? "cuda" : "cpu");
    print_plan(model, ctx, args);
  }

  const SimDevice where(groups, args.cuda);
  std::shared_ptr<const boundary::FusionProvider> fusion;
  if (args.fusion) fusion = where.fusions(groups);
  SimStack stack(model, ctx, args.pp, groups.pp_rank(), fusion, where.device());
  boundary::rows::PipelineHandoff handoff(groups, where.device());
  residual::ForwardBatch batch;
  const BatchVariant variant = variant_of(args);
  batch.facts = BatchFacts::make(args.tokens, groups.attn().dp, ctx.topology.attn_tp * ctx.topology.attn_cp,
                                 args.padding_mode(), variant)
                    .with_cp_shards(args.cp_shards, ctx.topology.attn_cp);
  // A set of stage runners per microbatch: a runner's buffers serve one live stream at a time.
  std::vector<Runners> runners;
  for (int m = 0; m < args.microbatches; ++m) runners.push_back(bind_runners(stack, groups));
  const ForwardOutput out = run_forward(model, stack, runners, groups, handoff, batch,
                                       {.capture = args.capture,
                                        .microbatches = args.microbatches,
                                        .device = where.device(),
                                        .fault = args.fault == "scale"   ? Fault::scale
                                                 : args.fault == "drop"  ? Fault::drop
                                                 : args.fault == "twice" ? Fault::twice
                                                                         : Fault::none});
  where.finish();

  const Tolerance tol =
      model.config().grid > 0 ? Tolerance::exact() : Tolerance::for_dtype(args.dtype, model.stage_count());
  std::vector<double> seen(2 * static_cast<size_t>(total), 0.0);
  const Comparison mine = check(out, ref, tol, seen);
  if (!mine.ok())
    std::fprintf(stderr, "[rank %d] MISMATCH: %lld of %lld values, first at %s\n", world->rank(),
                 static_cast<long long>(mine.mismatched), static_cast<long long>(mine.checked), mine.first_mismatch.c_str());

  const std::vector<double> traffic = gather_traffic(*world, groups.traffic());
  double summary[4] = {static_cast<double>(mine.checked), static_cast<double>(mine.mismatched), mine.max_abs_error,
                       mine.max_row_error};
  std::vector<double> all(4 * static_cast<size_t>(world->size()));
  world->all_gather(summary, all.data(), 4, DType::f64).wait();
  double checked = 0, mismatched = 0, max_err = 0, max_row_err = 0;
  for (size_t r = 0; r < static_cast<size_t>(world->size()); ++r) {
    checked += all[4 * r];
    mismatched += all[4 * r + 1];
    max_err = std::max(max_err, all[4 * r + 2]);
    max_row_err = std::max(max_row_err, all[4 * r + 3]);
  }
  const int64_t compared = tokens_compared(*world, seen);
  const bool pass = mismatched == 0 && compared == total;
  if (lead) {
    if (!args.quiet) print_traffic(traffic, world->size());
    if (compared != total)
      std::printf("# only %lld of %lld tokens' output and residual rows were compared\n",
                  static_cast<long long>(compared), static_cast<long long>(total));
    std::printf("# tolerance (%s): %s\n", args.dtype == DType::bf16 ? "bf16" : "fp32", tol.describe().c_str());
    if (model.config().grid > 0)
      std::printf("# partials and embeddings on a grid of %g: every sum is exact in bf16, in any order\n",
                  static_cast<double>(model.config().grid));
    std::printf("seam_decoder_sim: %s — %.0f values checked (output, residual%s), %.0f mismatched, max abs error %.3g "
                "(%.3g of its row's largest value)\n",
                pass ? "PASS" : "FAIL", checked, args.capture ? ", captures" : "", mismatched, max_err,
                max_row_err);
  }
  return pass ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_tool("seam_decoder_sim", run, argc, argv); }
