// A two-layer decoder (attention + FFN per layer) on the installed layer-boundary planner, with
// tensor parallelism 2, and with `--pp 2` also pipeline parallelism 2 (one layer per stage). Run it
// plainly: with no SEAM_RANK set it starts its own tp * pp ranks (fork + exec) over Seam's TCP store,
// as an engine launching its ranks would. Each rank runs its partition of the stack with tp = 2
// (attention and FFN split by columns, partial sums completed by the boundaries; the first partition
// hands its rows to the second through to_pp / from_pp), and the ranks of the last partition run the
// whole stack again in-process with tp = pp = 1 and check that the final-norm outputs agree. With
// `--device` (Seam built with CUDA) the boundaries' tensors live on the GPU (DeviceBoundary), while
// the model's compute stays on the host. Exit 0 only when every rank succeeds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <seam/boundary.h>
#include <seam/communicator.h>
#include <seam/errors.h>
#ifdef SEAM_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <seam/boundary_device.h>
#endif

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "model.h"

namespace sb = seam::boundary;

namespace {

using namespace cpp_decoder;

constexpr int kTp = 2;  // tensor parallelism of the run under test
constexpr int64_t kTokens = 5;
constexpr float kEps = 1e-6f;
// FP32 sums in another order (split columns, then the boundary's all-reduce): relative error only.
constexpr double kTolerance = 1e-5;

// Where the boundaries' tensors live: host memory, or with --device this rank's GPU (the model's
// compute below stays on the host, so its inputs and outputs cross with cudaMemcpy, which the
// boundary work on the default stream is ordered with).
class Memory {
 public:
  explicit Memory(bool on_gpu) : on_gpu_(on_gpu) {}
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() {
#ifdef SEAM_HAVE_CUDA
    for (void* p : gpu_) cudaFree(p);
#endif
  }
  // A rows x cols tensor holding `values`; it lives as long as this Memory.
  seam::Tensor hold(const Rows& values, int64_t rows, int64_t cols) {
    if (!on_gpu_) return view(host_.emplace_back(values), rows, cols);
#ifdef SEAM_HAVE_CUDA
    void* p = nullptr;
    check(cudaMalloc(&p, values.size() * sizeof(float)));
    gpu_.push_back(p);
    check(cudaMemcpy(p, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
    int device = 0;
    check(cudaGetDevice(&device));
    return seam::Tensor::contiguous(p, seam::DType::f32, rows, cols, seam::Device::cuda(device));
#endif
    return {};
  }
  // t's rows in host memory, densely.
  static Rows read(const seam::Tensor& t) {
    Rows out(static_cast<size_t>(t.rows * t.cols));
    if (!t.device.is_cuda()) {
      for (int64_t r = 0; r < t.rows; ++r)
        for (int64_t c = 0; c < t.cols; ++c) out[static_cast<size_t>(r * t.cols + c)] = at(t, r, c);
      return out;
    }
#ifdef SEAM_HAVE_CUDA
    const size_t width = static_cast<size_t>(t.cols) * sizeof(float);
    check(cudaMemcpy2D(out.data(), width, t.data, static_cast<size_t>(t.row_stride) * sizeof(float), width,
                       static_cast<size_t>(t.rows), cudaMemcpyDeviceToHost));
#endif
    return out;
  }

 private:
#ifdef SEAM_HAVE_CUDA
  static void check(cudaError_t e) {
    if (e != cudaSuccess) throw seam::Error(std::string("cpp_decoder: CUDA: ") + cudaGetErrorString(e));
  }
  std::vector<void*> gpu_;
#endif
  bool on_gpu_;
  std::deque<Rows> host_;
};

// One forward of this rank's partition of the stack on `groups`; returns the final-norm output of
// every token (row t), or nothing on a partition that hands its rows on to the next.
std::optional<Rows> forward(const Model& model, sb::Groups& groups, bool on_gpu) {
  const int pp = groups.config().pp, stage = groups.pp_rank();
  const int first_layer = kLayers * stage / pp, end_layer = kLayers * (stage + 1) / pp;  // this partition's
  Memory memory(on_gpu);
  std::vector<sb::Norm> norms;
  for (const Rows& w : model.norms) norms.emplace_back(memory.hold(w, 1, kHidden), kEps);
  // Construction, once per layer: the guide's Qwen3 fragment. A partition after a pipeline cut
  // declares its producer (the previous partition's last FFN) through before_pipeline_cut(); one
  // that ends before the stack does hands off to the pipeline.
  std::vector<sb::Stage> stages;
  for (int l = first_layer; l < end_layer; ++l) {
    std::optional<sb::StageDeclaration> previous;
    if (l > 0) previous = l == first_layer ? sb::declare_ffn().before_pipeline_cut() : sb::declare_ffn();
    const sb::StageNeighbours around{.previous = previous,
                                     .terminal = l == kLayers - 1,
                                     .hands_off_to_pipeline = l == end_layer - 1 && end_layer < kLayers};
    for (sb::Stage& s : sb::make_stages(groups, {{sb::declare_attn(), &norms[2 * l]}, {sb::declare_ffn(), &norms[2 * l + 1]}},
                                        around))
      stages.push_back(std::move(s));
  }

  const int64_t tokens[] = {kTokens};
  sb::Forward fwd(groups, groups.batch(tokens));
  const int k = groups.size(sb::Group::TP), r = groups.rank_in(sb::Group::TP);
  // The embedding is padded to the batch's rows (a multiple of the attention-TP size); the stack
  // updates it in place as the residual.
  Rows embedding = random_rows(7, fwd.local_rows() * kHidden, 1.f);
  for (int64_t i = kTokens * kHidden; i < fwd.local_rows() * kHidden; ++i) embedding[static_cast<size_t>(i)] = 0.f;

  sb::LayerOutput h;
  if (first_layer == 0) {
    seam::residual::start(fwd);
    h = sb::LayerOutput(memory.hold(embedding, fwd.local_rows(), kHidden));
  } else {
    h = stages[0].from_pp(fwd);  // what the previous partition's to_pp sent
  }
  Rows out;  // compute's output, before it moves to `memory` (which keeps it until the next boundary read it)
  for (int l = first_layer; l < end_layer; ++l) {
    sb::Stage &attn = stages[2 * (l - first_layer)], &mlp = stages[2 * (l - first_layer) + 1];
    seam::Tensor x = attn.prepare(h, fwd).values;
    Rows in = Memory::read(x);
    out.assign(static_cast<size_t>(x.rows * kHidden), 0.f);
    model.attention(l, view(in, x.rows, kHidden), out, r, k);
    h = attn.finish(memory.hold(out, x.rows, kHidden), fwd);  // PARTIAL: the FFN's input completes the sum

    x = mlp.prepare(h, fwd).values;
    in = Memory::read(x);
    out.assign(static_cast<size_t>(x.rows * kHidden), 0.f);
    sb::StageExit exit = mlp.exit(fwd);
    model.ffn(l, view(in, x.rows, kHidden), out, r, k);
    const seam::Tensor y = memory.hold(out, x.rows, kHidden);
    // Compute completes its own sum unless the exit leaves it to the boundary.
    if (k > 1 && !exit.flags().compute_skips_sum()) groups.all_reduce(sb::Group::TP, y).wait();
    h = exit.finish(y);
  }
  if (end_layer < kLayers) {
    seam::residual::to_pp(h, fwd);
    return std::nullopt;
  }
  const seam::Tensor y = seam::residual::norm(h, fwd, norms.back());
  const Rows rows = Memory::read(y);

  // The final rows are this replica's rows, or this rank's attention-TP slice of them when the last
  // FFN reduce-scattered its output: place them at their tokens.
  Rows result(static_cast<size_t>(kTokens * kHidden), NAN);
  const int64_t first = y.rows == fwd.local_rows() ? 0 : groups.rank_in(sb::Group::ATTN_TP) * y.rows;
  for (int64_t t = 0; t < y.rows; ++t)
    if (first + t < kTokens)
      for (int64_t c = 0; c < kHidden; ++c)
        result[static_cast<size_t>((first + t) * kHidden + c)] = rows[static_cast<size_t>(t * kHidden + c)];
  return result;
}

// A free port on the loopback, as seam_local_launcher picks one: bind port 0, read what was given.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    std::random_device rd;
    return 20000 + static_cast<int>(rd() % 12000);
  }
  close(fd);
  return ntohs(a.sin_port);
}

// The engine's launcher: starts `ranks` copies of this program with the store environment and
// waits for them (killing all if they outlive a deadline).
int launch(int ranks, char** argv) {
  std::random_device rd;
  char token[33];  // 128 random bits: the store refuses short or guessable tokens
  std::snprintf(token, sizeof(token), "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  const std::string addr = "127.0.0.1:" + std::to_string(free_port());
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("SEAM_STORE_ADDR", addr.c_str(), 1);
      setenv("SEAM_RANK", std::to_string(r).c_str(), 1);
      setenv("SEAM_WORLD_SIZE", std::to_string(ranks).c_str(), 1);
      setenv("SEAM_JOB_TOKEN", token, 1);
      setenv("SEAM_TIMEOUT_MS", "30000", 0);  // a lost peer fails the run instead of hanging it
      unsetenv("PMIX_NAMESPACE");             // not started by mpirun, whatever the parent was
      execv("/proc/self/exe", argv);
      std::perror("cpp_decoder: exec");
      _exit(127);
    }
    if (pid < 0) {
      std::perror("cpp_decoder: fork");
      for (pid_t p : pids) kill(p, SIGKILL);
      return 1;
    }
    pids.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int failed = 0;
  for (size_t left = pids.size(); left > 0;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      --left;
    } else if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "cpp_decoder: the ranks did not finish in time\n");
      for (pid_t p : pids) kill(p, SIGKILL);
      while (waitpid(-1, nullptr, 0) > 0) {
      }
      return 1;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  std::printf("cpp_decoder: %d ranks, %s\n", ranks, failed ? "FAILED" : "every one succeeded");
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  int pp = 1;
  bool on_gpu = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--pp" && i + 1 < argc) {
      pp = std::atoi(argv[++i]);
    } else if (arg == "--device") {
      on_gpu = true;
    } else {
      pp = 0;
    }
  }
#ifndef SEAM_HAVE_CUDA
  if (on_gpu) {
    std::fprintf(stderr, "cpp_decoder: --device needs Seam built with CUDA (seam::cuda)\n");
    return 2;
  }
#endif
  if (pp < 1 || pp > kLayers) {
    std::fprintf(stderr, "usage: cpp_decoder [--pp 1|2] [--device]\n");
    return 2;
  }
  if (!std::getenv("SEAM_RANK")) return launch(kTp * pp, argv);
  try {
    auto world = seam::comm::Communicator::create_world();
    const Model model;
    sb::ParallelConfig config = sb::ParallelConfig::make(kTp);
    config.pp = pp;
    sb::Groups groups(world, config);
#ifdef SEAM_HAVE_CUDA
    int gpus = 1;
    if (on_gpu && cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 1;
    // The boundaries of these groups run on this rank's GPU (the ranks share the GPUs round-robin).
    const auto gpu = on_gpu ? sb::DeviceBoundary::attach(groups, world->rank() % gpus) : nullptr;
#endif
    const std::optional<Rows> result = forward(model, groups, on_gpu);
    int ok = 1;
    if (!result) {
      std::printf("rank %d: pipeline stage %d handed its rows on\n", world->rank(), groups.pp_rank());
    } else {
      sb::Groups one;  // tp = pp = 1 in this process: nothing communicates
      const Rows& got = *result;
      const Rows want = *forward(model, one, false);
      // Relative to the value, or to 1 for the small ones (normalised rows are of order 1).
      double error = 0;
      int64_t held = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(got[i])) continue;  // a token on another rank's slice
        ++held;
        error = std::fmax(error, std::fabs(got[i] - want[i]) / std::fmax(1.0, std::fabs(want[i])));
      }
      ok = held > 0 && error <= kTolerance;
      std::printf("rank %d: %d-layer decoder, tp %d pp %d on the %s vs tp 1: %lld tokens, max relative error %.2g %s\n",
                  world->rank(), kLayers, kTp, pp, on_gpu ? "GPU" : "host", static_cast<long long>(held / kHidden),
                  error, ok ? "ok" : "WRONG");
    }
    // Every rank learns the verdict, and none leaves while the others still use the world.
    world->all_reduce(&ok, &ok, 1, seam::DType::i32, seam::ReduceOp::min).wait();
    return ok ? 0 : 1;
  } catch (const seam::Error& e) {
    std::fprintf(stderr, "cpp_decoder: %s\n", e.what());
    return 1;
  }
}
