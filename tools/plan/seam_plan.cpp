// seam_plan: prints the boundary plan Seam binds for a layer pattern, a topology and a reduction
// policy — one line per bound path (input and output of every stage, every batch variant) — and
// checks that neighbours built on different pipeline ranks agree on each edge.
//
//   seam_plan --pattern AFAFAF --tp 4 --attn-dp 2 --policy rs+rsv
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "seam/errors.h"
#include "tools/common/cli.h"
#include "runtime/boundary/introspection.h"
#include "tools/plan/pattern.h"

using namespace seam;
using namespace seam::boundary;

namespace {

void usage() {
  std::puts(
      "usage: seam_plan --pattern AFAF... [--layers N] [--quiet] [--tp N] [--attn-dp N] [--attn-tp N] [--attn-cp N] [--pp N]\n"
      "                 [--moe-ep N] [--moe-dp N] [--dense-tp N] [--policy ar|rs|rsv|rs+rsv|auto] [--arch NAME]\n"
      "                 [--model-type NAME] [--model-version V] [--a2a] [--input-scattered] [--dp-gatherv] [--prefill-cp [--moe-cp-gather]] [--dsa-cp] [--sp] [--tbo] [--lora]\n"
      "  pattern letters: A attention, F dense FFN, E sparse (MoE) FFN, M single-stage mixer\n"
      "  --layers repeats the pattern (a stack longer than one argument); --quiet prints no plan lines\n"
      "  --attn-tp defaults to tp / (attn-dp * attn-cp); --moe-tp to tp / (moe-ep * moe-dp)\n"
      "  --arch, --model-type and --model-version are the checkpoint's architecture, model_type and\n"
      "  version; --policy auto resolves from them (default policy: auto), e.g. --model-type minicpmv\n"
      "  --model-version 4.5 is MiniCPM-V 4.5");
}

struct Args {
  std::string pattern;     ///< the whole stack: period x layers
  std::string period;      ///< --pattern as given
  int layers = 1;
  bool quiet = false;
  int tp = 1, attn_dp = 1, attn_tp = 0, attn_cp = 1, pp = 1, moe_ep = 1, moe_dp = 1, dense_tp = 0;
  std::string policy = "auto", arch, model_type, model_version;
  bool a2a = false, input_scattered = false, dp_gatherv = false, moe_cp_gather = false, prefill_cp = false, dsa_cp = false, sp = false, tbo = false, lora = false;
};

// Largest group size a flag takes: products of sizes are checked in 64 bits, never in int.
constexpr int kMaxSize = 1 << 20;
// Largest stack: --pattern x --layers stages.
constexpr int kMaxStages = 1 << 22;

Args parse(int argc, char** argv) {
  Args a;
  cli::ArgReader in(argc, argv, usage);
  while (in.next()) {
    if (plan::take_stack_flag(in, a.pattern, a.layers, kMaxStages)) continue;
    const std::string& flag = in.flag();
    if (flag == "--quiet") a.quiet = true;
    else if (flag == "--tp") a.tp = in.int_number(1, kMaxSize);
    else if (flag == "--attn-dp") a.attn_dp = in.int_number(1, kMaxSize);
    else if (flag == "--attn-tp") a.attn_tp = in.int_number(0, kMaxSize);
    else if (flag == "--attn-cp") a.attn_cp = in.int_number(1, kMaxSize);
    else if (flag == "--pp") a.pp = in.int_number(1, kMaxSize);
    else if (flag == "--moe-ep") a.moe_ep = in.int_number(1, kMaxSize);
    else if (flag == "--moe-dp") a.moe_dp = in.int_number(1, kMaxSize);
    else if (flag == "--dense-tp") a.dense_tp = in.int_number(0, kMaxSize);
    else if (flag == "--policy") a.policy = in.value();
    else if (flag == "--arch") a.arch = in.value();
    else if (flag == "--model-type") a.model_type = in.value();
    else if (flag == "--model-version") a.model_version = in.value();
    else if (flag == "--a2a") a.a2a = true;
    else if (flag == "--input-scattered") a.input_scattered = true;
    else if (flag == "--dp-gatherv") a.dp_gatherv = true;
    else if (flag == "--moe-cp-gather") a.moe_cp_gather = true;
    else if (flag == "--prefill-cp") a.prefill_cp = true;
    else if (flag == "--dsa-cp") a.dsa_cp = true;
    else if (flag == "--sp") a.sp = true;
    else if (flag == "--tbo") a.tbo = true;
    else if (flag == "--lora") a.lora = true;
    else
      in.reject();
  }
  if (a.pattern.empty()) throw ValueError("--pattern is required");
  plan::check_stack(a.pattern, a.layers, kMaxStages);
  a.period = a.pattern;
  std::string stack;
  for (int i = 0; i < a.layers; ++i) stack += a.period;
  a.pattern = std::move(stack);
  // The defaults below divide --tp by these products: check them before any division.
  const int64_t attn_shards = int64_t{a.attn_dp} * a.attn_cp, moe_shards = int64_t{a.moe_ep} * a.moe_dp;
  if (a.attn_tp == 0 && a.tp % attn_shards != 0) throw ValueError("--attn-dp * --attn-cp must divide --tp");
  if (a.attn_tp != 0 && attn_shards * a.attn_tp != a.tp) throw ValueError("--attn-dp * --attn-cp * --attn-tp must equal --tp");
  if (a.tp % moe_shards != 0) throw ValueError("--moe-ep * --moe-dp must divide --tp");
  if (a.dense_tp != 0 && a.dense_tp != 1 && a.dense_tp != a.tp) throw ValueError("--dense-tp must be 1 or --tp");
  return a;
}

PlanContext context_of(const Args& a) {
  PlanContext ctx;
  Topology& t = ctx.topology;
  t.tp = a.tp;
  t.attn_dp = a.attn_dp;
  t.attn_cp = a.attn_cp;
  t.attn_tp = a.attn_tp ? a.attn_tp : static_cast<int>(a.tp / (int64_t{a.attn_dp} * a.attn_cp));
  t.pp = a.pp;
  t.moe_ep = a.moe_ep;
  t.moe_dp = a.moe_dp;
  t.moe_tp = static_cast<int>(a.tp / (int64_t{a.moe_ep} * a.moe_dp));
  t.moe_dense_tp = a.dense_tp;
  t.moe_a2a_backend = a.a2a;
  t.attn_tp_input_scattered = a.input_scattered;
  t.dp_gatherv = a.dp_gatherv;
  t.enable_prefill_cp = a.prefill_cp || a.dsa_cp;
  t.cp_over_attn_cp = a.dsa_cp;
  t.moe_cp_all_gather = a.moe_cp_gather;
  t.sequence_parallel = a.sp;
  t.two_batch_overlap = a.tbo;
  t.lora = a.lora;
  t.validate();
  const auto requested = parse_policy(a.policy);
  if (!requested) throw ValueError("--policy: unknown policy '" + a.policy + "'");
  ModelFacts model;
  if (!a.arch.empty()) model.architectures.push_back(a.arch);
  model.model_type = a.model_type;
  model.version = a.model_version;
  if (!a.model_version.empty() && !parse_model_version(a.model_version))
    throw ValueError("--model-version: '" + a.model_version + "' is not dot-separated integers");
  ctx.policy = PolicyRegistry::with_defaults().resolve(*requested, model);
  return ctx;
}

int run(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const PlanContext ctx = context_of(args);
  const auto decls = plan::declare_pattern(args.pattern);

  const auto start = std::chrono::steady_clock::now();
  const auto partitions = plan::build_partitions(ctx, decls, args.pp);
  const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  const std::string shown = args.layers == 1 ? args.period : args.period + " x " + std::to_string(args.layers);
  std::string from;
  if (!args.arch.empty()) from += " arch " + args.arch;
  if (!args.model_type.empty()) from += " model_type " + args.model_type;
  if (!args.model_version.empty()) from += " version " + args.model_version;
  std::printf("# pattern %s  %s  policy %s%s%s\n", shown.c_str(), ctx.topology.describe().c_str(),
              std::string(policy_name(ctx.policy)).c_str(), from.empty() ? "" : " from", from.c_str());
  std::printf("# built %zu stages in %.3f ms\n", decls.size(), build_ms);
  int index = 0;
  const StageBoundary* last = nullptr;
  bool edges_agree = true;
  for (size_t r = 0; r < partitions.size(); ++r) {
    if (args.pp > 1) std::printf("# pipeline rank %zu\n", r);
    for (const StageBoundary& stage : partitions[r]) {
      // Independently built neighbours must bind the same edge (checked across pipeline cuts too).
      if (last)
        for (int v = 0; v < kBatchVariantCount; ++v) {
          const auto variant = static_cast<BatchVariant>(v);
          if (!last->plan().has_path(variant)) continue;
          const EdgeDecl& out = last->plan().path(variant).outgoing;
          const EdgeDecl& in = stage.plan().path(variant).incoming;
          if (out.need ? !(out == in) : !out.same_producer_half(in)) edges_agree = false;
        }
      const char letter = args.pattern[static_cast<size_t>(index)];
      bool first = true;
      for (const std::string& line : args.quiet ? std::vector<std::string>{} : describe_plan(stage.plan())) {
        std::printf("%-4s %c  %s\n", first ? ("L" + std::to_string(index)).c_str() : "", first ? letter : ' ',
                    line.c_str());
        first = false;
      }
      last = &stage;
      ++index;
    }
  }
  std::printf("# neighbouring stages %s on every edge\n", edges_agree ? "agree" : "DISAGREE");
  return edges_agree ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_tool("seam_plan", run, argc, argv); }
