// nccl-tests' command line: -b -e -f -n -w -c -d -o -R -G, and -h; and -H, -P, -L, -M.
#pragma once

#include <cstddef>
#include <optional>

#include "seam/dtype.h"

namespace seam::perf {

/// Where the buffers live (-M): host memory and the host Communicator, or CUDA device memory and
/// a DeviceCommunicator made from it.
enum class Memory { host, cuda };

struct PerfArgs {
  size_t min_bytes = 32 << 20;  ///< -b (suffixes K, M, G)
  size_t max_bytes = 32 << 20;  ///< -e
  double factor = 2;            ///< -f: each size is the previous one times this
  int iters = 20;               ///< -n: timed iterations per row
  int warmup = 5;               ///< -w: untimed iterations first
  bool check = true;            ///< -c 1/0: check every result against the reference
  DType dtype = DType::f32;     ///< -d float|half|bfloat16|double|int32
  ReduceOp op = ReduceOp::sum;  ///< -o sum|max|min
  bool shared_memory = false;   ///< -R 1: buffers in SharedHostMemory (zero-copy schedules)
  bool huge_pages = false;      ///< -H 1: plain buffers on transparent huge pages
  bool pile_up = false;         ///< -P 1: every rank moved onto one CPU after the set-up
  bool busy_load = false;       ///< -L 1: a busy thread beside each rank for the timed rows
  Memory memory = Memory::host;  ///< -M host|cuda
  int graph_calls = 0;          ///< -G N (cuda): N calls captured in a CUDA graph, one launch a step
};

/// Parses the flags; prints usage and returns nullopt on -h or a bad flag (`ok` tells which).
std::optional<PerfArgs> parse_perf_args(int argc, char** argv, const char* program, bool& ok);

}  // namespace seam::perf
