#include "tools/sim/sim_args.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "seam/errors.h"
#include "runtime/boundary/policy.h"
#include "tools/common/cli.h"
#include "tools/plan/pattern.h"

namespace seam::sim {

namespace {

void usage() {
  std::puts(
      "usage: mpirun -n <tp*pp> seam_decoder_sim --pattern AF [--layers N] [--tp N] [--attn-dp N] [--attn-cp N [--cp-decode]]\n"
      "         [--gqa-cp [--cp-shards a,b,...]] [--pp N] [--moe-ep N] [--dense-tp 1] [--input-scattered] [--dp-gatherv] [--policy ar|rs|rsv|rs+rsv|auto]\n"
      "         [--tokens a,b,...] [--padding max|sum|auto] [--dtype fp32|bf16] [--hidden N] [--seed N]\n"
      "         [--capture] [--microbatches 2] [--no-fusion] [--device cpu|cuda] [--quiet]\n"
      "         [--inject-fault scale|drop|twice]\n"
      "  pattern letters: A attention, F dense FFN, E expert FFN, M single-stage mixer; the stack is the\n"
      "  pattern repeated --layers times. --tokens gives the real tokens of each attention-DP replica\n"
      "  (one entry per replica, 0 for an idle one). attn_tp = tp / (attn_dp * attn_cp).\n"
      "  --device cuda runs the boundaries on device tensors, each rank on GPU local_rank % device_count\n"
      "  (the model's compute stays on host; its inputs and outputs cross to the device).\n"
      "  Experts are sharded over EP = --moe-ep (default tp), each expert's columns over MoE-TP = tp / EP.\n"
      "  --dense-tp 1 runs dense FFNs fully data-parallel, each rank on its own attention-TP slice of rows.\n"
      "  --attn-cp N runs a context-parallel (DSA/MLA-style prefill CP) batch: each CP rank holds an equal\n"
      "  shard of its replica's tokens; with --cp-decode, a decode batch on that topology instead (every CP\n"
      "  rank holds its replica's rows whole). --gqa-cp makes it GQA prefill CP (the MoE gathers over the\n"
      "  MoE-CP group), and --cp-shards a,b,... gives each CP rank's rows of its replica (uneven shards,\n"
      "  padded to the longest where they are gathered).\n"
      "  --dp-gatherv gathers SUM_LEN DP rows with one all_gatherv where attn_tp is 1 and tp = attn_dp\n"
      "  (SGLANG_DP_USE_GATHERV).\n"
      "  --input-scattered runs INPUT_SCATTERED batches: the embedding is a TP partial (a vocab-parallel\n"
      "  embedding), attention reads on attention-TP slices and gathers its input itself.\n"
      "  --capture makes every attention prepare capture its updated residual (on its producer's rows);\n"
      "  each capture is checked against the residual the reference's stage reads.\n"
      "  --microbatches 2 runs two-batch overlap: each replica splits its rows into two microbatches with\n"
      "  their own streams and stage runners, interleaved stage by stage and merged before the norm / send.\n"
      "  The split comes after the first dense FFN followed by a sparse one (TBO_SPLIT), else at the\n"
      "  partition's input.\n"
      "  --inject-fault (for tests) corrupts one rank's first partial: scaled\n"
      "  by 1.01, dropped, or counted twice; the run must then FAIL.");
}

// Bounds on the flags' values: the simulator allocates stages x hidden x tokens, and products of
// group sizes are checked in 64 bits, never in int.
constexpr int kMaxSize = 1 << 20;
constexpr int64_t kMaxStages = 1 << 20;
constexpr int64_t kMaxHidden = 1 << 14;
constexpr int64_t kMaxTokens = 1 << 16;

}  // namespace

std::string SimArgs::stages() const {
  std::string s;
  for (int i = 0; i < layers; ++i) s += pattern;
  return s;
}

PaddingMode SimArgs::padding_mode() const {
  if (padding == "max") return PaddingMode::MAX_LEN;
  if (padding == "sum") return PaddingMode::SUM_LEN;
  return choose_padding_mode(tokens, /*is_extend=*/false, /*backend_forces_max_len=*/false);
}

SimArgs parse_sim_args(int argc, char** argv) {
  SimArgs a;
  cli::ArgReader in(argc, argv, usage);
  while (in.next()) {
    if (plan::take_stack_flag(in, a.pattern, a.layers, static_cast<int>(kMaxStages))) continue;
    const std::string& flag = in.flag();
    if (flag == "--tp") a.tp = in.int_number(1, kMaxSize);
    else if (flag == "--attn-dp") a.attn_dp = in.int_number(1, kMaxSize);
    else if (flag == "--attn-cp") a.attn_cp = in.int_number(1, kMaxSize);
    else if (flag == "--pp") a.pp = in.int_number(1, kMaxSize);
    else if (flag == "--dense-tp") a.dense_tp = in.int_number(0, kMaxSize);
    else if (flag == "--moe-ep") a.moe_ep = in.int_number(0, kMaxSize);
    else if (flag == "--policy") a.policy = in.value();
    else if (flag == "--tokens") a.tokens = cli::parse_int_list(flag, in.value(), 0, kMaxTokens);
    else if (flag == "--padding") a.padding = in.value();
    else if (flag == "--hidden") a.hidden = in.number(1, kMaxHidden);
    else if (flag == "--seed") a.seed = static_cast<uint64_t>(in.number(0, INT64_MAX));
    else if (flag == "--no-fusion") a.fusion = false;
    else if (flag == "--input-scattered") a.input_scattered = true;
    else if (flag == "--dp-gatherv") a.dp_gatherv = true;
    else if (flag == "--cp-decode") a.cp_decode = true;
    else if (flag == "--gqa-cp") a.gqa_cp = true;
    else if (flag == "--cp-shards") a.cp_shards = cli::parse_int_list(flag, in.value(), 0, kMaxTokens);
    else if (flag == "--capture") a.capture = true;
    else if (flag == "--microbatches") a.microbatches = in.int_number(1, 2);
    else if (flag == "--quiet") a.quiet = true;
    else if (flag == "--inject-fault") {
      a.fault = in.value();
      if (a.fault != "scale" && a.fault != "drop" && a.fault != "twice")
        throw ValueError("--inject-fault must be scale, drop or twice");
    }
    else if (flag == "--device") {
      const std::string d = in.value();
      if (d != "cpu" && d != "cuda") throw ValueError("--device must be cpu or cuda");
      a.cuda = d == "cuda";
    }
    else if (flag == "--dtype") {
      const std::string d = in.value();
      if (d == "fp32") a.dtype = DType::f32;
      else if (d == "bf16") a.dtype = DType::bf16;
      else throw ValueError("--dtype must be fp32 or bf16");
    } else {
      in.reject();
    }
  }
  plan::check_stack(a.pattern, a.layers, kMaxStages);
  // Products of sizes in 64 bits: two in-range ints may overflow int.
  if (a.tp % (int64_t{a.attn_dp} * a.attn_cp) != 0) throw ValueError("--attn-dp * --attn-cp must divide --tp");
  if (a.moe_ep > 0 && a.tp % a.moe_ep != 0) throw ValueError("--moe-ep must divide --tp");
  if (a.dense_tp != 0 && a.dense_tp != 1 && a.dense_tp != a.tp) throw ValueError("--dense-tp must be 1 or --tp");
  if (int64_t{a.tp} * a.pp > kMaxSize) throw ValueError("--tp * --pp: at most " + std::to_string(kMaxSize) + " ranks");
  if (a.attn_cp > 1 && a.input_scattered) throw ValueError("--attn-cp runs without --input-scattered");
  if (a.cp_decode && a.attn_cp == 1) throw ValueError("--cp-decode needs --attn-cp");
  if (a.gqa_cp && (a.attn_cp == 1 || a.cp_decode)) throw ValueError("--gqa-cp needs --attn-cp and a prefill batch");
  if (!a.cp_shards.empty()) {
    if (!a.gqa_cp) throw ValueError("--cp-shards needs --gqa-cp (DSA/MLA CP shards are equal)");
    if (static_cast<int>(a.cp_shards.size()) != a.attn_cp)
      throw ValueError("--cp-shards needs one entry per attention-CP rank (" + std::to_string(a.attn_cp) + ")");
    if (a.microbatches == 2) throw ValueError("--cp-shards runs without --microbatches 2");
  }
  if (static_cast<int>(a.tokens.size()) != a.attn_dp)
    throw ValueError("--tokens needs one entry per attention-DP replica (" + std::to_string(a.attn_dp) + ")");
  if (std::accumulate(a.tokens.begin(), a.tokens.end(), int64_t{0}) == 0)
    throw ValueError("--tokens must give at least one token: a batch without tokens compares nothing");
  if (!boundary::parse_policy(a.policy)) throw ValueError("--policy: unknown policy '" + a.policy + "'");
  if (a.padding != "max" && a.padding != "sum" && a.padding != "auto") throw ValueError("--padding must be max, sum or auto");
  if (a.input_scattered && (a.attn_dp != 1 || (a.tp & (a.tp - 1)) != 0))
    throw ValueError("--input-scattered needs no attention DP and a power-of-two --tp");
  if (a.pp > static_cast<int64_t>(a.pattern.size()) * a.layers) throw ValueError("--pp must be between 1 and the stage count");
  return a;
}

}  // namespace seam::sim
