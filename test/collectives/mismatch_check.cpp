// Integration check under mpirun: ranks that call all-reduce with different counts, or the
// v-collectives with different blocks of the same total (and, where
// the shared-memory schedules carry them in their call signature, different dtypes or ops) all
// get a MismatchError, as do ranks of which only some pass buffers in SharedHostMemory; and the
// communicator stays usable afterwards. On the message path (UCX) a dtype disagreement with
// equal byte counts ends, last, in a MismatchError within milliseconds (the calls' messages
// carry different signatures, and a waiting rank finds the peer's unmatched one), never in a
// combined result.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "layouts/errors.h"
#include "runtime/comm/communicator.h"
#include "transports/shm/shared_host_memory.h"

namespace {

using seam::DType;
using seam::ReduceOp;

/// Runs `call` on this rank: true when it threw a MismatchError; else says what came instead.
bool refused(const seam::comm::Communicator& comm, const std::string& what, const std::function<void()>& call) {
  try {
    call();
    std::fprintf(stderr, "rank %d: %s: no error\n", comm.rank(), what.c_str());
  } catch (const seam::MismatchError&) {
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s: %s instead of a MismatchError\n", comm.rank(), what.c_str(), e.what());
  }
  return false;
}

/// Rank 0 calls with (count0, dtype0, op0), the others with (count, dtype, op). Returns true
/// when this rank got a MismatchError.
bool mismatch_detected(seam::comm::Communicator& comm, size_t count0, size_t count, DType dtype0,
                       DType dtype, ReduceOp op0, ReduceOp op, const char* what) {
  const bool first = comm.rank() == 0;
  std::vector<double> buffer(200, 1.0);
  return refused(comm, what, [&] {
    comm.all_reduce(buffer.data(), buffer.data(), first ? count0 : count, first ? dtype0 : dtype,
                    first ? op0 : op)
        .wait();
  });
}

/// Message path: rank 0 sums floats, the others int32s of the same size. True when this rank
/// got, long before the call's deadline, a MismatchError naming what the peer called, or the
/// abort notice of the peer that found out first, which says the same (the call's messages are
/// stranded: the communicator is unusable afterwards).
bool message_path_dtype_mismatch_refused(seam::comm::Communicator& comm) {
  std::vector<float> buffer(64, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    comm.all_reduce(buffer.data(), buffer.data(), buffer.size(),
                    comm.rank() == 0 ? DType::f32 : DType::i32, ReduceOp::sum)
        .wait();
    std::fprintf(stderr, "rank %d: float vs int32 over %s: no error\n", comm.rank(),
                 comm.transport_name().c_str());
    return false;
  } catch (const seam::MismatchError& e) {
    error = e.what();
  } catch (const seam::CommError& e) {  // the peer's abort notice
    error = e.what();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: float vs int32: %s instead of a MismatchError\n", comm.rank(),
                 e.what());
    return false;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool named = error.find("called all_reduce float sum") != std::string::npos ||
                     error.find("called all_reduce int32 sum") != std::string::npos;
  if (!named || seconds > 10)
    std::fprintf(stderr, "rank %d: float vs int32 after %.1f s: %s\n", comm.rank(), seconds,
                 error.c_str());
  return named && seconds <= 10;
}

/// The v-collectives with block counts the ranks disagree on though their totals agree: rank 0
/// gives block 0 two more elements, the others block 1. True when this rank got a MismatchError
/// (data placed by different offsets would otherwise come out silently wrong).
bool blocks_mismatch_detected(seam::comm::Communicator& comm, bool gather, size_t base) {
  const int n = comm.size(), me = comm.rank();
  std::vector<size_t> counts(n, base);
  counts[me == 0 ? 0 : 1] += 2;
  size_t total = 0;
  for (size_t c : counts) total += c;
  std::vector<float> send(total, 1.0f), recv(total, 0.0f);
  const std::string what =
      std::string(gather ? "all_gatherv blocks" : "reduce_scatterv blocks") + " (" + std::to_string(base) + ")";
  return refused(comm, what, [&] {
    if (gather)
      comm.all_gatherv(send.data(), recv.data(), counts, DType::f32).wait();
    else
      comm.reduce_scatterv(send.data(), recv.data(), counts, DType::f32, ReduceOp::sum).wait();
  });
}

/// Rank 0's buffer lies in SharedHostMemory (zero-copy schedule), the others' do not.
bool shared_memory_mismatch_detected(seam::comm::Communicator& comm) {
  constexpr size_t kCount = 64 * 1024;  // past the zero-copy threshold
  auto shared = seam::SharedHostMemory::allocate(kCount * sizeof(float));
  std::vector<float> plain(kCount, 1.0f);
  float* buffer = comm.rank() == 0 ? static_cast<float*>(shared->data()) : plain.data();
  return refused(comm, "SharedHostMemory on rank 0 only",
                 [&] { comm.all_reduce(buffer, buffer, kCount, DType::f32, ReduceOp::sum).wait(); });
}

}  // namespace

int main() {
  try {
    auto comm = seam::comm::Communicator::create_world();
    // The shared-memory schedules compare full call signatures; with SEAM_ALGO (or UCX) the
    // calls go through messages, whose tags carry them.
    const bool shm_schedules = comm->transport_name() == "shm" && std::getenv("SEAM_ALGO") == nullptr;
    int ok = 1;
    if (comm->size() > 1) {
      ok &= mismatch_detected(*comm, 100, 120, DType::f32, DType::f32, ReduceOp::sum, ReduceOp::sum,
                              "count 100 vs 120");
      // Through messages only the ranks whose own blocks disagree with a peer's find out (with
      // more ranks, one whose blocks all agree completes with the right data): every rank does
      // at two ranks.
      if (shm_schedules || comm->size() == 2)
        for (size_t base : {size_t{1000}, size_t{40000}})
          for (bool gather : {true, false}) ok &= blocks_mismatch_detected(*comm, gather, base);
      if (shm_schedules) {
        ok &= mismatch_detected(*comm, 64, 64, DType::f32, DType::i32, ReduceOp::sum,
                                ReduceOp::sum, "float vs int32");
        ok &= mismatch_detected(*comm, 64, 64, DType::f32, DType::f32, ReduceOp::sum,
                                ReduceOp::max, "sum vs max");
        ok &= shared_memory_mismatch_detected(*comm);
      }
      // Still usable: a matching call gives the right sum.
      double one = 1.0;
      comm->all_reduce(&one, &one, 1, DType::f64, ReduceOp::sum).wait();
      ok &= one == comm->size();
    }
    int all = ok;
    comm->all_reduce(&all, &all, 1, DType::i32, ReduceOp::min).wait();
    if (comm->rank() == 0)
      std::printf("mismatch_check: %d ranks, transport %s: %s\n", comm->size(),
                  comm->transport_name().c_str(), all ? "OK" : "FAILED");
    // Last: it leaves the communicator unusable. Each rank reports for itself.
    if (comm->size() > 1 && !shm_schedules && !message_path_dtype_mismatch_refused(*comm))
      return 1;
    return all ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mismatch_check: %s\n", e.what());
    return 1;
  }
}
