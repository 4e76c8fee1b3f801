#include <cstdint>
#include "tools/sim/sim_args.h"

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include "layouts/errors.h"

namespace seam::sim {

namespace {

void usage() {
  std::puts(
      "usage: mpirun -n <tp*pp> seam_decoder_sim --pattern AF [--layers N] [--tp N] [--attn-dp N] [--attn-cp N [--cp-decode]]\n"
      "         [--pp N] [--moe-ep N] [--dense-tp 1] [--input-scattered] [--policy ar|rs|rsv|rs+rsv|auto]\n"
      "         [--tokens a,b,...] [--padding max|sum|auto] [--dtype fp32|bf16] [--hidden N] [--seed N]\n"
      "         [--capture] [--microbatches 2] [--no-fusion] [--device cpu|cuda] [--quiet]\n"
      "  pattern letters: A attention, F dense FFN, E expert FFN, M single-stage mixer; the stack is the\n"
      "  pattern repeated --layers times. --tokens gives the real tokens of each attention-DP replica\n"
      "  (one entry per replica, 0 for an idle one). attn_tp = tp / (attn_dp * attn_cp).\n"
      "  --device cuda runs the boundaries on device tensors, each rank on GPU local_rank % device_count\n"
      "  (the model's compute stays on host; its inputs and outputs cross to the device).\n"
      "  Experts are sharded over EP = --moe-ep (default tp), each expert's columns over MoE-TP = tp / EP.\n"
      "  --dense-tp 1 runs dense FFNs fully data-parallel, each rank on its own attention-TP slice of rows.\n"
      "  --attn-cp N runs a context-parallel (DSA/MLA-style prefill CP) batch: each CP rank holds an equal\n"
      "  shard of its replica's tokens; with --cp-decode, a decode batch on that topology instead (every CP\n"
      "  rank holds its replica's rows whole).\n"
      "  --input-scattered runs INPUT_SCATTERED batches: the embedding is a TP partial (a vocab-parallel\n"
      "  embedding), attention reads on attention-TP slices and gathers its input itself.\n"
      "  --capture makes every attention prepare capture its updated residual (on its producer's rows);\n"
      "  each capture is checked against the residual the reference's stage reads.\n"
      "  --microbatches 2 runs two-batch overlap: each replica splits its rows into two microbatches with\n"
      "  their own streams and stage runners, interleaved stage by stage and merged before the norm / send.\n"
      "  The split comes after the first dense FFN followed by a sparse one (TBO_SPLIT), else at the\n"
      "  partition's input.");
}

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) throw ValueError("empty entry in --tokens " + s);
    out.push_back(std::stoll(item));
    if (out.back() < 0) throw ValueError("--tokens entries must not be negative");
  }
  return out;
}

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
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw ValueError("missing value for " + flag);
      return argv[++i];
    };
    if (flag == "--pattern") a.pattern = value();
    else if (flag == "--layers") a.layers = std::stoi(value());
    else if (flag == "--tp") a.tp = std::stoi(value());
    else if (flag == "--attn-dp") a.attn_dp = std::stoi(value());
    else if (flag == "--attn-cp") a.attn_cp = std::stoi(value());
    else if (flag == "--pp") a.pp = std::stoi(value());
    else if (flag == "--dense-tp") a.dense_tp = std::stoi(value());
    else if (flag == "--moe-ep") a.moe_ep = std::stoi(value());
    else if (flag == "--policy") a.policy = value();
    else if (flag == "--tokens") a.tokens = parse_list(value());
    else if (flag == "--padding") a.padding = value();
    else if (flag == "--hidden") a.hidden = std::stoll(value());
    else if (flag == "--seed") a.seed = std::stoull(value());
    else if (flag == "--no-fusion") a.fusion = false;
    else if (flag == "--input-scattered") a.input_scattered = true;
    else if (flag == "--cp-decode") a.cp_decode = true;
    else if (flag == "--capture") a.capture = true;
    else if (flag == "--microbatches") a.microbatches = std::stoi(value());
    else if (flag == "--quiet") a.quiet = true;
    else if (flag == "--device") {
      const std::string d = value();
      if (d != "cpu" && d != "cuda") throw ValueError("--device must be cpu or cuda");
      a.cuda = d == "cuda";
    }
    else if (flag == "--dtype") {
      const std::string d = value();
      if (d == "fp32") a.dtype = DType::f32;
      else if (d == "bf16") a.dtype = DType::bf16;
      else throw ValueError("--dtype must be fp32 or bf16");
    } else if (flag == "-h" || flag == "--help") {
      usage();
      std::exit(0);
    } else
      throw ValueError("unknown flag " + flag);
  }
  if (a.pattern.empty() || a.layers < 1) throw ValueError("--pattern must be non-empty and --layers positive");
  if (a.tp < 1 || a.attn_dp < 1 || a.attn_cp < 1 || a.tp % (a.attn_dp * a.attn_cp) != 0)
    throw ValueError("--attn-dp * --attn-cp must divide --tp");
  if (a.moe_ep < 0 || (a.moe_ep > 0 && a.tp % a.moe_ep != 0)) throw ValueError("--moe-ep must divide --tp");
  if (a.microbatches != 1 && a.microbatches != 2) throw ValueError("--microbatches must be 1 or 2");
  if (a.attn_cp > 1 && a.input_scattered) throw ValueError("--attn-cp runs without --input-scattered");
  if (a.cp_decode && a.attn_cp == 1) throw ValueError("--cp-decode needs --attn-cp");
  if (static_cast<int>(a.tokens.size()) != a.attn_dp)
    throw ValueError("--tokens needs one entry per attention-DP replica (" + std::to_string(a.attn_dp) + ")");
  if (std::accumulate(a.tokens.begin(), a.tokens.end(), int64_t{0}) == 0)
    throw ValueError("--tokens must give at least one token: a batch without tokens compares nothing");
  if (a.padding != "max" && a.padding != "sum" && a.padding != "auto") throw ValueError("--padding must be max, sum or auto");
  if (a.input_scattered && (a.attn_dp != 1 || (a.tp & (a.tp - 1)) != 0))
    throw ValueError("--input-scattered needs no attention DP and a power-of-two --tp");
  if (a.pp < 1 || a.pp > static_cast<int>(a.stages().size())) throw ValueError("--pp must be between 1 and the stage count");
  return a;
}

}  // namespace seam::sim
