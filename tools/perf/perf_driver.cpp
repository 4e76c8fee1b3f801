// The shared driver of the perf binaries: buffers, timing, checking and the nccl-tests table.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/reduce/reduce.h"
#include "seam/tensor.h"
#include "runtime/collectives/schedules.h"
#include "runtime/collectives/shm/tuner.h"
#include "runtime/exec/host_steal.h"
#include "tools/perf/busy_load.h"
#include "tools/perf/device_runner.h"
#include "tools/perf/membw.h"
#include "tools/perf/mpi_baseline.h"
#include "tools/perf/perf_args.h"
#include "tools/perf/perf_collective.h"
#include "tools/perf/pile_up.h"
#include "transports/shm/shared_host_memory.h"
#include "layouts/element_values.h"

namespace seam::perf {

double input_value(int rank, size_t j) {
  return static_cast<double>((j * 7 + static_cast<size_t>(rank) * 13) % 17) - 8;
}

double reduce_over_ranks(int ranks, size_t j, ReduceOp op) {
  double acc = input_value(0, j);
  for (int p = 1; p < ranks; ++p) acc = apply_reduce_op(op, acc, input_value(p, j));
  return acc;
}

const void* RowPointers::send_of(bool in_place) const {
  if (!in_place) return send;
  return c.in_place == InPlace::send_inside_recv ? shared + s.offsets[rank] * es : shared;
}

void* RowPointers::recv_of(bool in_place) const {
  if (!in_place) return c.in_place == InPlace::root_sends && rank == 0 ? send : recv;
  return c.in_place == InPlace::recv_inside_send ? shared + s.offsets[rank] * es : shared;
}

char* RowPointers::in_place_input() const {
  return c.in_place == InPlace::send_inside_recv ? shared + s.offsets[rank] * es : shared;
}

double count_wrong(const PerfCollective& c, const Shape& s, int rank, int ranks,
                   const void* result, DType dtype, ReduceOp op) {
  double wrong = 0;
  for (size_t i = 0; i < s.recv_count; ++i)
    if (element_value(result, i, dtype) != as_element(c.expected(s, rank, ranks, i, op), dtype))
      ++wrong;
  return wrong;
}

namespace {

/// A row's buffer: plain host memory (on huge pages with -H 1), or SharedHostMemory with -R 1.
class RowMemory {
 public:
  RowMemory(size_t bytes, const PerfArgs& a) : bytes_(bytes) {
    if (a.shared_memory)
      shared_ = SharedHostMemory::allocate(bytes);
    else
      plain_ = Buffer(bytes, a.huge_pages ? Pages::huge : Pages::base);
  }
  void* data() const { return shared_ ? shared_->data() : plain_.data(); }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
  Buffer plain_;
  std::unique_ptr<SharedHostMemory> shared_;
};

/// One rank's buffers for a row, and the pointers an out-of-place or in-place call gets.
struct RowBuffers {
  RowBuffers(const PerfCollective& c, const Shape& s, const PerfArgs& a, int rank)
      : c(c),
        s(s),
        dtype(a.dtype),
        rank(rank),
        es(dtype_size(a.dtype)),
        send(std::max<size_t>(s.send_count, 1) * es, a),
        recv(std::max<size_t>(s.recv_count, 1) * es, a),
        shared(std::max<size_t>(std::max(s.send_count, s.recv_count), 1) * es, a),
        at{c, s, rank, es, static_cast<char*>(send.data()), static_cast<char*>(recv.data()),
           static_cast<char*>(shared.data())} {
    for (size_t j = 0; j < s.send_count; ++j)
      set_element_value(send.data(), j, dtype, input_value(rank, j));
  }
  /// Resets the in-place buffer to this rank's input (where its convention puts it).
  void reset_in_place() {
    std::memset(shared.data(), 0xff, shared.bytes());
    std::memcpy(at.in_place_input(), send.data(), s.send_count * es);
  }
  const void* send_of(bool in_place) const { return at.send_of(in_place); }
  void* recv_of(bool in_place) const { return at.recv_of(in_place); }

  const PerfCollective& c;
  const Shape& s;
  DType dtype;
  int rank;
  size_t es;
  RowMemory send, recv, shared;
  RowPointers at;
};

/// Times the calling thread went to sleep (voluntary context switches; a yield that lets another
/// task run is not one): Seam's waits run in the thread that waits on the call, and sleep at
/// most 1 ms at a time. 0 where the count cannot be read.
double thread_sleeps() {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return static_cast<double>(usage.ru_nvcsw);
}

/// Median seconds of `iters` calls after `warmup` untimed ones; `sleeps`, if given, gets how
/// often the thread slept per timed call.
template <class Call>
double median_seconds(int warmup, int iters, Call call, double* sleeps = nullptr) {
  for (int i = 0; i < warmup; ++i) call();
  const double sleeps_before = thread_sleeps();
  std::vector<double> times(iters);
  for (auto& t : times) {
    auto start = std::chrono::steady_clock::now();
    call();
    t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (sleeps) *sleeps = (thread_sleeps() - sleeps_before) / iters;
  std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
  return times[iters / 2];
}

/// Elements a row counts: all blocks of blocked collectives; all-reduce's and broadcast's one buffer.
size_t row_count(const Shape& s) { return s.offsets.empty() ? s.recv_count : s.offsets.back(); }

struct Row {
  double seconds[3] = {0, 0, 0};  // out-of-place, in-place, MPI (slowest rank's median)
  double wrong[2] = {0, 0};       // elements wrong, summed over ranks
  double sleeps = 0;              // sleeps per timed out-of-place call (the most on a rank)
  collectives::Algorithm algorithm{};  // what the timed out-of-place calls took
  std::string_view schedule;      // the shared-memory schedule of the timed out-of-place calls
  double bound_rate = 0;          // bytes per second %bound reads B against (W)
};

/// Untimed calls before each row's out-of-place and MPI ones: -w, plus the calls in which the
/// shared-memory schedule tuner explores the size class, so the row times the schedule it
/// settled on (as an engine's steady state would); MPI gets as many.
int settled_warmup(int warmup) { return warmup + collectives::ScheduleTuner::kSettlingCalls; }

class Driver {
 public:
  /// `device`: the -M cuda runner, null for host buffers.
  Driver(const PerfCollective& c, const PerfArgs& a, comm::Communicator& comm, MpiBaseline& mpi,
         DeviceRunner* device)
      : c_(c), a_(a), comm_(comm), mpi_(mpi), device_(device), n_(comm.size()), rank_(comm.rank()) {}

  /// Runs every row; returns the number of wrong elements.
  double run() {
    if (device_)
      gather_devices();
    else
      membw_ = measure_copy_bandwidth(comm_);
    if (a_.pile_up) piled_on_ = pile_up_on_one_cpu(comm_);
    std::optional<BusyLoad> load;  // started after any pile-up, so it shares the rank's CPUs
    if (a_.busy_load) load.emplace();
    if (rank_ == 0) print_header();
    double wrong = 0;
    const size_t es = dtype_size(a_.dtype);
    // The rows' shapes, and on host buffers each row's W (membw.h: the fastest rate of moving a
    // rank's share of B), measured before any row is timed so that no measurement runs between
    // two rows. A row of 0 bytes (-b 0: what a call of nothing costs) is followed by one element.
    std::vector<std::pair<Shape, double>> rows;
    for (double size = static_cast<double>(a_.min_bytes); size <= static_cast<double>(a_.max_bytes);
         size = size > 0 ? size * a_.factor : static_cast<double>(es)) {
      Shape s = c_.shape(static_cast<size_t>(size) / es, n_, rank_);
      const double bytes = c_.bound_bytes(static_cast<double>(row_count(s) * es), n_);
      rows.emplace_back(std::move(s),
                        device_ ? devbw_ : bound_rate(comm_, static_cast<size_t>(bytes / n_), membw_.threads));
    }
    const auto ticks_before = comm::cpu_ticks();
    for (auto& [s, rate] : rows) {
      Row row = measure(s);
      row.bound_rate = rate;
      wrong += row.wrong[0] + row.wrong[1];
      if (rank_ == 0) print_row(row_count(s) * es, row_count(s), row);
    }
    steal_ = comm::steal_share(ticks_before, comm::cpu_ticks());
    return wrong;
  }

  /// The share of this machine's CPU time its host stole while the rows ran (run()).
  std::optional<double> steal() const { return steal_; }

 private:
  Row measure(const Shape& s) {
    Row row;
    if (device_)
      device_->measure(s, row.seconds, row.wrong);
    else
      measure_host(s, row);
    // The slowest rank's times and the most sleeps, in one call.
    double most[4] = {row.seconds[0], row.seconds[1], row.seconds[2], row.sleeps};
    comm_.all_reduce(most, most, 4, DType::f64, ReduceOp::max).wait();
    std::copy(most, most + 3, row.seconds);
    row.sleeps = most[3];
    comm_.all_reduce(row.wrong, row.wrong, 2, DType::f64, ReduceOp::sum).wait();
    return row;
  }

  /// This rank's times and wrong elements of a row on host buffers, Seam's and MPI's.
  void measure_host(const Shape& s, Row& row) {
    RowBuffers b(c_, s, a_, rank_);
    for (bool in_place : {false, true}) {
      if (in_place) b.reset_in_place();
      auto call = [&] {
        c_.seam(comm_, b.send_of(in_place), b.recv_of(in_place), s, a_.dtype, a_.op).wait();
      };
      comm_.barrier().wait();
      row.seconds[in_place] = median_seconds(in_place ? a_.warmup : settled_warmup(a_.warmup),
                                             a_.iters, call, in_place ? nullptr : &row.sleeps);
      if (!in_place) {
        row.algorithm = collectives::last_algorithm();
        row.schedule = collectives::last_shm_schedule();
      }
      if (a_.check) {
        if (in_place)
          b.reset_in_place();
        else
          std::memset(b.recv.data(), 0xff, b.recv.bytes());
        call();
        row.wrong[in_place] = count_wrong(c_, s, rank_, n_, b.recv_of(in_place), a_.dtype, a_.op);
      }
    }
    if (mpi_.active()) {
      MpiArgs args = mpi_.args(a_.dtype, a_.op);
      MPI_Barrier(MPI_COMM_WORLD);
      row.seconds[2] = median_seconds(settled_warmup(a_.warmup), a_.iters,
                                      [&] { c_.mpi(b.send.data(), b.recv.data(), s, args); });
      // A rank can leave an MPI collective while a peer's sends to it still wait for it to
      // progress MPI (rendezvous acknowledgements): without this, that peer stayed in MPI while
      // the others waited for it in Seam's next call, until the deadline (4 ranks on 2 vCPUs,
      // 64 MiB all-gatherv on SharedHostMemory, 1 run in 10).
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }

  /// Every rank's GPU and copy bandwidth: the copies ran on all ranks at once, so their sum is
  /// the ceiling of all ranks' traffic, as membw's is on the host.
  void gather_devices() {
    struct Placement {
      double bytes_per_second;
      int64_t device;
    };
    Placement mine{device_->info().copy_bytes_per_second, device_->info().device};
    std::vector<Placement> all(static_cast<size_t>(n_));
    comm_.all_gather(&mine, all.data(), sizeof mine, DType::u8).wait();
    for (const Placement& p : all) {
      devices_.push_back(static_cast<int>(p.device));
      devbw_ += p.bytes_per_second;
    }
  }

  void print_header() const {
    std::printf("# Seam %s_perf: %d ranks, transport %s, launched by %s, reduction kernels %s\n",
                std::string(c_.name).c_str(), n_, comm_.transport_name().c_str(),
                mpi_.active() ? "mpirun" : "plain processes (TCP store)",
                std::string(kernels::reduce_isa_name(kernels::best_reduce_isa())).c_str());
    if (device_)
      print_device_header();
    else
      print_host_header();
    std::printf("#\n");
    constexpr const char* kColumns =
        "# %10s %12s %8s %6s   %9s %7s %7s %6s   %9s %7s %7s %6s   %9s %8s %6s %6s  %s\n";
    std::printf(kColumns, "", "", "", "", "out-of-place", "", "", "", "in-place", "", "", "", "mpi",
                "", "", "", "");
    std::printf(kColumns, "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong",
                "time", "algbw", "busbw", "#wrong", "time", "seam/mpi", "%bound", "sleeps",
                "algorithm");
    std::printf(kColumns, "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
                "(GB/s)", "(GB/s)", "", "(us)", "", "", "/call", "");
    std::fflush(stdout);
  }

  void print_host_header() const {
    std::printf("# membw %.2f GB/s: memcpy bytes read + written per second, all %d ranks at once, "
                "%d thread%s each, buffers past the last-level cache\n",
                membw_.bytes_per_second / 1e9, n_, membw_.threads, membw_.threads == 1 ? "" : "s");
    if (membw_.kernel_bytes_per_second > 0)
      std::printf(
          "# cma %.2f GB/s, %.2f of membw: the same copy by process_vm_readv, the kernel's "
          "cross-process copy that single-copy schedules and Open MPI's take between plain "
          "buffers\n",
          membw_.kernel_bytes_per_second / 1e9,
          membw_.kernel_bytes_per_second / membw_.bytes_per_second);
    else
      std::printf("# cma: process_vm_readv not permitted here\n");
    std::printf("# time: median of -n %d iterations after -w %d (out-of-place and MPI: %d, so "
                "the schedule tuner has settled), slowest rank; -c %d; seam/mpi and %%bound use "
                "the out-of-place time\n"
                "# %%bound: the bytes every schedule must read and write (B) over the fastest rate "
                "at which all ranks at once read or copy B/n bytes each from the nearest cache "
                "that holds them, measured per row (bound_rate)\n",
                a_.iters, a_.warmup, settled_warmup(a_.warmup), a_.check ? 1 : 0);
    print_load_lines();
    std::printf(
        "# sleeps: how often the calling thread slept per out-of-place call, the mean over the "
        "timed calls on the rank where it was highest (voluntary context switches: the waits' "
        "sleeps, 1 ms at most each, and any other blocking); each costs a wake-up\n");
    std::printf("# buffers: %s (both libraries run on them)\n",
                a_.shared_memory ? "SharedHostMemory, -R 1 (Seam's zero-copy schedules)"
                : a_.huge_pages  ? "plain host memory on transparent huge pages, -H 1"
                                 : "plain host memory, -R 0 -H 0");
  }

  void print_device_header() const {
    const DeviceInfo& mine = device_->info();
    std::string gpus;
    for (int d : devices_) gpus += (gpus.empty() ? "" : " ") + std::to_string(d);
    std::printf("# -M cuda: DeviceCommunicator, %s path, on %s; ranks' GPUs (local rank %% GPU "
                "count): %s\n",
                mine.path.c_str(), mine.name.c_str(), gpus.c_str());
    std::printf("# devbw %.2f GB/s: cudaMemcpyAsync device to device of 256 MiB, bytes read + "
                "written per second, all %d ranks at once, summed (rank 0's GPU: %.2f GB/s); "
                "%%bound uses it\n",
                devbw_ / 1e9, n_, mine.copy_bytes_per_second / 1e9);
    if (a_.graph_calls > 0)
      std::printf("# time: CUDA events around each step, a step one launch of a CUDA graph of -G "
                  "%d calls; per call, median of -n %d steps after -w %d, slowest rank; -c %d "
                  "(checked by a one-call graph)\n",
                  a_.graph_calls, a_.iters, a_.warmup, a_.check ? 1 : 0);
    else
      std::printf("# time: CUDA events around each call, median of -n %d calls after -w %d, "
                  "slowest rank; -c %d; -G 0: no CUDA graph\n",
                  a_.iters, a_.warmup, a_.check ? 1 : 0);
    print_load_lines();
    std::printf("# mpi: n/a, this Open MPI has no CUDA support; sleeps: n/a, the host only "
                "enqueues\n");
    std::printf("# buffers: device memory (cudaMalloc), inputs copied from the host, results "
                "copied back to check\n");
  }

  void print_load_lines() const {
    if (a_.pile_up)
      std::printf(
          "# -P 1: every rank's threads moved onto the lowest CPU each may run on after "
          "the set-up (rank 0: CPU %d; -1: could not)\n",
          piled_on_);
    if (a_.busy_load)
      std::printf(
          "# -L 1: a busy thread beside each rank, on the CPUs it may run on, while the "
          "rows ran (both libraries)\n");
  }

  void print_row(size_t bytes, size_t count, const Row& row) const {
    const double size = static_cast<double>(bytes);
    std::string cells[2];
    for (int p = 0; p < 2; ++p) {
      double algbw = row.seconds[p] > 0 ? size / row.seconds[p] / 1e9 : 0;
      char cell[96];
      std::snprintf(cell, sizeof cell, "%9.2f %7.2f %7.2f %6s", row.seconds[p] * 1e6, algbw,
                    algbw * c_.busbw_factor(n_),
                    a_.check ? std::to_string(static_cast<long>(row.wrong[p])).c_str() : "N/A");
      cells[p] = cell;
    }
    char mpi[64];
    if (mpi_.active() && !device_)
      std::snprintf(mpi, sizeof mpi, "%9.2f %8.2f", row.seconds[2] * 1e6,
                    row.seconds[2] > 0 ? row.seconds[0] / row.seconds[2] : 0.0);
    else
      std::snprintf(mpi, sizeof mpi, "%9s %8s", "n/a", "n/a");
    const double bound_seconds = row.bound_rate > 0 ? c_.bound_bytes(size, n_) / row.bound_rate : 0;
    char sleeps[16];
    if (device_)
      std::snprintf(sleeps, sizeof sleeps, "%6s", "n/a");
    else
      std::snprintf(sleeps, sizeof sleeps, "%6.2f", row.sleeps);
    // Shared-memory calls also name their schedule; device calls their path.
    std::string path(collectives::algorithm_name(row.algorithm));
    if (device_)
      path = "cuda:" + device_->info().path;
    else if (row.algorithm == collectives::Algorithm::shm && !row.schedule.empty())
      path.append(":").append(row.schedule);
    std::printf("  %10zu %12zu %8s %6s   %s   %s   %s %6.1f %s  %s\n", bytes, count,
                std::string(dtype_name(a_.dtype)).c_str(),
                c_.reduces ? std::string(reduce_op_name(a_.op)).c_str() : "none", cells[0].c_str(),
                cells[1].c_str(), mpi,
                row.seconds[0] > 0 ? 100 * bound_seconds / row.seconds[0] : 0.0, sleeps,
                path.c_str());
    std::fflush(stdout);
  }

  const PerfCollective& c_;
  const PerfArgs& a_;
  comm::Communicator& comm_;
  MpiBaseline& mpi_;
  DeviceRunner* device_;
  int n_, rank_;
  CopyBandwidth membw_{};
  std::vector<int> devices_;  // -M cuda: every rank's GPU
  double devbw_ = 0;          // -M cuda: all ranks' device copy bandwidths, summed
  int piled_on_ = -1;  // -P 1: the CPU every rank was moved onto
  std::optional<double> steal_;
};

/// The -M cuda runner, where this build has CUDA.
std::unique_ptr<DeviceRunner> device_runner(const PerfCollective& c, const PerfArgs& a,
                                            std::shared_ptr<comm::Communicator> comm) {
#if SEAM_PERF_CUDA
  return make_device_runner(c, a, std::move(comm));
#else
  throw std::runtime_error("-M cuda: this build has no device path (built without CUDA)");
#endif
}

}  // namespace

int run_perf(int argc, char** argv, const PerfCollective& c) {
  MpiBaseline mpi(&argc, &argv);
  bool ok = true;
  std::string program = std::string(c.name) + "_perf";
  auto args = parse_perf_args(argc, argv, program.c_str(), ok);
  if (!args) return ok ? 0 : 2;
  try {
    auto comm = comm::Communicator::create_world();
    std::unique_ptr<DeviceRunner> device;
    if (args->memory == Memory::cuda) device = device_runner(c, *args, comm);
    Driver driver(c, *args, *comm, mpi, device.get());
    double wrong = driver.run();
    if (comm->rank() == 0) {
      std::printf("# Out of bounds values : %.0f %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
      if (auto steal = driver.steal())
        std::printf(
            "# host steal: %.2f%% of rank 0's machine's CPU time while the rows ran "
            "(/proc/stat; a virtual machine's host running other guests)\n",
            100 * *steal);
      std::fflush(stdout);
    }
    return wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 1;
  }
}

}  // namespace seam::perf
