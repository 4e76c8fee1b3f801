#include "tools/perf/perf_args.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "tools/common/cli.h"

namespace seam::perf {
namespace {

void usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s [-b minbytes] [-e maxbytes] [-f stepfactor] [-n iters] [-w warmup]\n"
               "          [-c 0|1] [-d float|half|bfloat16|double|int32] [-o sum|max|min]\n"
               "          [-R 0|1] [-H 0|1] [-P 0|1] [-L 0|1] [-M host|cuda] [-G calls] [-h]\n"
               "  sizes take K, M, G suffixes; defaults -b 32M -e 32M -f 2 -n 20 -w 5 -c 1\n"
               "  -d float -o sum -R 0. -R 1 allocates the buffers in SharedHostMemory (as\n"
               "  nccl-tests' -R registers them). -H 1 puts plain buffers on transparent huge\n"
               "  pages (seam::Pages::huge). Under mpirun each row is also timed with the\n"
               "  MPI library, on the same buffers. -P 1 moves each rank onto the lowest CPU\n"
               "  it may run on after the set-up: one CPU for all where the launcher did not\n"
               "  bind them (mpirun --bind-to none), as a scheduler may put unpinned ranks.\n"
               "  -L 1 runs a busy thread beside each rank while the rows are timed (a machine\n"
               "  whose cores also run other work), for both libraries.\n"
               "  -M cuda runs Seam's DeviceCommunicator on device buffers (GPU local rank %% GPU\n"
               "  count; local rank from OMPI_COMM_WORLD_LOCAL_RANK or SEAM_LOCAL_RANK), timed\n"
               "  with CUDA events; no MPI column. -G N (with -M cuda) captures N calls in a CUDA\n"
               "  graph and times its launches, as nccl-tests' -G; -G 0 (default) calls directly.\n",
               program);
}

}  // namespace

std::optional<PerfArgs> parse_perf_args(int argc, char** argv, const char* program, bool& ok) {
  PerfArgs a;
  ok = true;
  try {
    int opt;
    while ((opt = getopt(argc, argv, "b:e:f:n:w:c:d:o:R:H:P:L:M:G:h")) != -1) {
      switch (opt) {
        case 'b': a.min_bytes = cli::parse_bytes("-b", optarg, uint64_t{1} << 40); break;
        case 'e': a.max_bytes = cli::parse_bytes("-e", optarg, uint64_t{1} << 40); break;
        case 'f': a.factor = std::stod(optarg); break;
        case 'n': a.iters = std::stoi(optarg); break;
        case 'w': a.warmup = std::stoi(optarg); break;
        case 'c': a.check = std::stoi(optarg) != 0; break;
        case 'R': a.shared_memory = std::stoi(optarg) != 0; break;
        case 'H':
          a.huge_pages = std::stoi(optarg) != 0;
          break;
        case 'P': a.pile_up = std::stoi(optarg) != 0; break;
        case 'L':
          a.busy_load = std::stoi(optarg) != 0;
          break;
        case 'M':
          if (std::string(optarg) == "host")
            a.memory = Memory::host;
          else if (std::string(optarg) == "cuda")
            a.memory = Memory::cuda;
          else
            throw std::invalid_argument(std::string("unknown memory: ") + optarg);
          break;
        case 'G': a.graph_calls = std::stoi(optarg); break;
        case 'd': {
          auto d = parse_dtype(optarg);
          if (!d) throw std::invalid_argument(std::string("unknown datatype: ") + optarg);
          a.dtype = *d;
          break;
        }
        case 'o': {
          auto o = parse_reduce_op(optarg);
          if (!o) throw std::invalid_argument(std::string("unknown op: ") + optarg);
          a.op = *o;
          break;
        }
        case 'h': usage(program); return std::nullopt;
        default: ok = false; usage(program); return std::nullopt;
      }
    }
    if (a.factor <= 1 || a.iters < 1 || a.warmup < 0 || a.min_bytes > a.max_bytes)
      throw std::invalid_argument("need -f > 1, -n >= 1, -w >= 0 and -b <= -e");
    if (a.shared_memory && a.huge_pages)
      throw std::invalid_argument("-R 1 and -H 1 choose different buffers: give one");
    if (a.graph_calls < 0) throw std::invalid_argument("need -G >= 0");
    if (a.memory == Memory::host && a.graph_calls > 0)
      throw std::invalid_argument("-G captures device calls: it needs -M cuda");
    if (a.memory == Memory::cuda && (a.shared_memory || a.huge_pages))
      throw std::invalid_argument("-R 1 and -H 1 choose host buffers: not with -M cuda");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    usage(program);
    ok = false;
    return std::nullopt;
  }
  return a;
}

}  // namespace seam::perf
