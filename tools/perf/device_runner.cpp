// The perf binaries' -M cuda path: device buffers, a DeviceCommunicator made from the host
// communicator, CUDA-event timing, and with -G N the calls captured in a CUDA graph (as
// nccl-tests' -G). Inputs and checks go through host copies, so a row checks what the host path
// checks.
#include "tools/perf/device_runner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "seam/device_communicator.h"
#include "tools/perf/device_copy_bandwidth.h"
#include "tools/common/cli.h"
#include "layouts/element_values.h"

namespace seam::perf {
namespace {

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}


/// cudaMalloc'd memory for the whole run: the communicator caches the allocations it has seen,
/// so the buffers are not freed and made again between rows.
class DeviceMemory {
 public:
  explicit DeviceMemory(size_t bytes) : bytes_(std::max<size_t>(bytes, 1)) {
    check_cuda(cudaMalloc(&data_, bytes_), "cudaMalloc");
  }
  ~DeviceMemory() { cudaFree(data_); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  char* data() const { return static_cast<char*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

class Event {
 public:
  Event() { check_cuda(cudaEventCreate(&event_), "cudaEventCreate"); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_{};
};

/// Seconds from `start` to `stop`, both passed.
double elapsed_seconds(const Event& start, const Event& stop) {
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
  return ms / 1e3;
}

/// `calls` calls made on `stream` captured into one executable graph.
class Graph {
 public:
  template <class Call>
  Graph(cudaStream_t stream, int calls, Call call) {
    // Thread-local: the communicator's own threads may call CUDA while this one captures.
    check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture");
    cudaGraph_t graph = nullptr;
    try {
      for (int i = 0; i < calls; ++i) call();
    } catch (...) {
      // Ends the capture, so the stream is usable for what follows.
      if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
      throw;
    }
    check_cuda(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    cudaError_t err = cudaGraphInstantiate(&exec_, graph, 0);
    cudaGraphDestroy(graph);
    check_cuda(err, "cudaGraphInstantiate");
  }
  ~Graph() { cudaGraphExecDestroy(exec_); }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void launch(cudaStream_t stream) const {
    check_cuda(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
  }

 private:
  cudaGraphExec_t exec_{};
};

/// The DeviceCommunicator's call for the collective, with the arguments its host call takes.
comm::Work device_call(device::DeviceCommunicator& dc, const PerfCollective& c, const Shape& s,
                       const void* send, void* recv, DType dtype, ReduceOp op,
                       cudaStream_t stream) {
  using collectives::Collective;
  switch (c.kind) {
    case Collective::all_reduce:
      return dc.all_reduce(send, recv, s.recv_count, dtype, op, stream);
    case Collective::reduce_scatter:
      return dc.reduce_scatter(send, recv, s.recv_count, dtype, op, stream);
    case Collective::reduce_scatterv:
      return dc.reduce_scatterv(send, recv, s.blocks, dtype, op, stream);
    case Collective::all_gather: return dc.all_gather(send, recv, s.send_count, dtype, stream);
    case Collective::all_gatherv: return dc.all_gatherv(send, recv, s.blocks, dtype, stream);
    case Collective::broadcast:
      return dc.broadcast(dc.rank() == 0 ? const_cast<void*>(send) : recv, s.recv_count, dtype, 0,
                          stream);
    default: throw std::logic_error("no device call for " + std::string(c.name));
  }
}


/// Elements of the buffers every row fits in: those of the largest row, plus one per rank, since
/// the last rank's uneven block can be that much larger at a smaller count (proportional_blocks).
size_t largest_count(const PerfCollective& c, const PerfArgs& a, int n, int rank, bool send) {
  Shape s = c.shape(a.max_bytes / dtype_size(a.dtype), n, rank);
  return (send ? s.send_count : s.recv_count) + static_cast<size_t>(n);
}

class CudaRunner final : public DeviceRunner {
 public:
  CudaRunner(const PerfCollective& c, const PerfArgs& a, std::shared_ptr<comm::Communicator> host)
      : c_(c),
        a_(a),
        host_(*host),
        n_(host->size()),
        rank_(host->rank()),
        es_(dtype_size(a.dtype)),
        start_(a.iters),
        stop_(a.iters) {
    int count = 0;
    check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (count == 0) throw std::runtime_error("-M cuda: no CUDA device");
    info_.device = cli::launcher_local_rank() % count;
    check_cuda(cudaSetDevice(info_.device), "cudaSetDevice");
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, info_.device), "cudaGetDeviceProperties");
    info_.name = prop.name;
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    dc_ = device::DeviceCommunicator::create(std::move(host), info_.device);
    info_.path = std::string(dc_->path());
    if (a_.graph_calls > 0 && info_.path != "peer")
      throw std::runtime_error("-G: the " + info_.path +
                               " path cannot be captured in a CUDA graph (no peer access)");
    // Every rank copies at once, as the host membw does.
    host_.barrier().wait();
    info_.copy_bytes_per_second = device_copy_bandwidth(stream_);
    // In-place buffers hold the larger of a row's send and receive counts.
    size_t send = largest_count(c, a, n_, rank_, true), recv = largest_count(c, a, n_, rank_, false);
    send_ = std::make_unique<DeviceMemory>(send * es_);
    recv_ = std::make_unique<DeviceMemory>(recv * es_);
    shared_ = std::make_unique<DeviceMemory>(std::max(send, recv) * es_);
  }

  ~CudaRunner() override {
    // The communicator's kernels finish on the stream before it and the buffers go.
    cudaStreamSynchronize(stream_);
    dc_.reset();
    cudaStreamDestroy(stream_);
  }

  const DeviceInfo& info() const override { return info_; }

  void measure(const Shape& s, double seconds[2], double wrong[2]) override {
    if (s.send_count * es_ > send_->bytes() || s.recv_count * es_ > recv_->bytes() ||
        std::max(s.send_count, s.recv_count) * es_ > shared_->bytes())
      throw std::logic_error("perf row larger than the device buffers of the largest row");
    // The same inputs as the host path's, and its in-place buffer: 0xff around this rank's input.
    std::vector<char> send(std::max<size_t>(s.send_count, 1) * es_);
    std::vector<char> shared(std::max<size_t>(std::max(s.send_count, s.recv_count), 1) * es_,
                             static_cast<char>(0xff));
    for (size_t j = 0; j < s.send_count; ++j)
      set_element_value(send.data(), j, a_.dtype, input_value(rank_, j));
    RowPointers on_host{c_, s, rank_, es_, send.data(), nullptr, shared.data()};
    std::memcpy(on_host.in_place_input(), send.data(), s.send_count * es_);
    RowPointers at{c_, s, rank_, es_, send_->data(), recv_->data(), shared_->data()};
    upload(send_->data(), send.data(), s.send_count * es_);

    for (bool in_place : {false, true}) {
      if (in_place) upload(shared_->data(), shared.data(), shared.size());
      auto call = [&] {
        device_call(*dc_, c_, s, at.send_of(in_place), at.recv_of(in_place), a_.dtype, a_.op,
                    stream_);
      };
      seconds[in_place] = time_per_call(call);
      if (!a_.check) continue;
      if (in_place)
        upload(shared_->data(), shared.data(), shared.size());
      else
        check_cuda(cudaMemsetAsync(recv_->data(), 0xff, s.recv_count * es_, stream_),
                   "cudaMemsetAsync");
      // Checked the way it was timed: a one-call graph under -G (kept until the stream is done).
      std::unique_ptr<Graph> graph;
      if (a_.graph_calls > 0) {
        graph = std::make_unique<Graph>(stream_, 1, call);
        graph->launch(stream_);
      } else {
        call();
      }
      std::vector<char> result(std::max<size_t>(s.recv_count, 1) * es_);
      check_cuda(cudaMemcpyAsync(result.data(), at.recv_of(in_place), s.recv_count * es_,
                                 cudaMemcpyDeviceToHost, stream_),
                 "cudaMemcpyAsync");
      synchronize();
      wrong[in_place] = count_wrong(c_, s, rank_, n_, result.data(), a_.dtype, a_.op);
    }
  }

 private:
  /// Median seconds per call over -n steps after -w untimed ones: a step is one call, or with
  /// -G N one launch of a graph of N calls. Events around each step leave out the host's gaps
  /// between steps; the ranks start the timed steps together.
  template <class Call>
  double time_per_call(Call call) {
    std::unique_ptr<Graph> graph;
    if (a_.graph_calls > 0) graph = std::make_unique<Graph>(stream_, a_.graph_calls, call);
    auto step = [&] {
      if (graph)
        graph->launch(stream_);
      else
        call();
    };
    for (int i = 0; i < a_.warmup; ++i) step();
    synchronize();
    host_.barrier().wait();
    for (int i = 0; i < a_.iters; ++i) {
      check_cuda(cudaEventRecord(start_[i].get(), stream_), "cudaEventRecord");
      step();
      check_cuda(cudaEventRecord(stop_[i].get(), stream_), "cudaEventRecord");
    }
    synchronize();
    std::vector<double> times(a_.iters);
    for (int i = 0; i < a_.iters; ++i) times[i] = elapsed_seconds(start_[i], stop_[i]);
    std::nth_element(times.begin(), times.begin() + a_.iters / 2, times.end());
    return times[a_.iters / 2] / std::max(a_.graph_calls, 1);
  }

  void upload(void* to, const void* from, size_t bytes) {
    check_cuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
  }

  /// Waits for the stream, then throws any failure that aborted the communicator (graph launches
  /// return no Work to wait on).
  void synchronize() {
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    dc_->check();
  }

  const PerfCollective& c_;
  const PerfArgs& a_;
  comm::Communicator& host_;
  int n_, rank_;
  size_t es_;
  DeviceInfo info_;
  cudaStream_t stream_{};
  std::shared_ptr<device::DeviceCommunicator> dc_;
  std::unique_ptr<DeviceMemory> send_, recv_, shared_;
  std::vector<Event> start_, stop_;  // one pair per timed step
};

}  // namespace

std::unique_ptr<DeviceRunner> make_device_runner(const PerfCollective& c, const PerfArgs& a,
                                                 std::shared_ptr<comm::Communicator> host) {
  return std::make_unique<CudaRunner>(c, a, std::move(host));
}

}  // namespace seam::perf
