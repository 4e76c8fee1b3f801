// Integration check under mpirun (or over hosts in network namespaces): ranks that call
// all-reduce with different counts, or the
// v-collectives with different blocks of the same total (and, where
// the shared-memory schedules carry them in their call signature, different dtypes or ops) all
// get a MismatchError, as do ranks of which only some pass buffers in SharedHostMemory; and the
// communicator stays usable afterwards. On the message path (UCX) a dtype disagreement with
// equal byte counts ends, last, in a MismatchError within milliseconds (the calls' messages
// carry different signatures, and a waiting rank finds the peer's unmatched one), never in a
// combined result. Over hosts a count disagreement ends the same way (the two-level schedules
// leave the other hosts' ranks waiting on those that found it), and with --dtype-over-hosts
// so does a dtype disagreement between hosts, and with --zero-over-hosts one where rank 0
// passes nothing; with --stranding-count, a count disagreement in
// the ring and halving schedules (--stranding-zero: where the rank that disagrees passes nothing).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "seam/errors.h"
#include "seam/communicator.h"
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

/// Runs `call`, which must end on this rank long before its deadline in a MismatchError that
/// says it aborted the communicator, or in the abort notice of the peer that found the mismatch
/// first, either saying `named` (the call's messages or waits are stranded: the communicator is
/// unusable afterwards).
bool ends_in_mismatch(const seam::comm::Communicator& comm, const std::string& what,
                      const std::string& named, const std::function<void()>& call) {
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    call();
    std::fprintf(stderr, "rank %d: %s over %s: no error\n", comm.rank(), what.c_str(),
                 comm.transport_name().c_str());
    return false;
  } catch (const seam::MismatchError& e) {
    error = e.what();
    if (!e.aborts()) {
      std::fprintf(stderr, "rank %d: %s: the MismatchError does not say it aborted: %s\n",
                   comm.rank(), what.c_str(), e.what());
      return false;
    }
  } catch (const seam::CommError& e) {  // the peer's abort notice
    error = e.what();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s: %s instead of a MismatchError\n", comm.rank(), what.c_str(),
                 e.what());
    return false;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool said = error.find(named) != std::string::npos;
  if (!said || seconds > 10)
    std::fprintf(stderr, "rank %d: %s after %.1f s: %s\n", comm.rank(), what.c_str(), seconds,
                 error.c_str());
  return said && seconds <= 10;
}

/// Message path: rank 0 sums floats, the others int32s of the same size; every rank learns
/// what a peer called.
bool message_path_dtype_mismatch_refused(seam::comm::Communicator& comm) {
  std::vector<float> buffer(64, 1.0f);
  const bool first = comm.rank() == 0;
  return ends_in_mismatch(comm, "float vs int32", "called all_reduce", [&] {
    comm.all_reduce(buffer.data(), buffer.data(), buffer.size(), first ? DType::f32 : DType::i32,
                    ReduceOp::sum)
        .wait();
  });
}

/// Over hosts (the two-level schedules): rank 0 all-reduces `first` elements, the others 100.
/// The ranks of rank 0's host find out in shared memory; the other hosts' ranks, which would
/// wait for them in the network phase, learn it from their abort notice.
bool mismatch_over_hosts_refused(seam::comm::Communicator& comm, size_t first) {
  std::vector<float> buffer(120, 1.0f);
  const std::string what = "count 100 vs " + std::to_string(first) + " over hosts";
  return ends_in_mismatch(comm, what, "called with other arguments", [&] {
    comm.all_reduce(buffer.data(), buffer.data(), comm.rank() == 0 ? first : 100, DType::f32,
                    ReduceOp::sum)
        .wait();
  });
}

/// Over hosts whose ranks are consecutive: the first half of the ranks (the first host) sums
/// floats, the rest int32s of the same size. Each host agrees within itself, so only the network
/// phase finds out, from the peer's message of another signature.
bool dtype_over_hosts_refused(seam::comm::Communicator& comm) {
  std::vector<float> buffer(64, 1.0f);
  const bool first_host = comm.rank() < comm.size() / 2;
  return ends_in_mismatch(comm, "float vs int32 over hosts", "called all_reduce", [&] {
    comm.all_reduce(buffer.data(), buffer.data(), buffer.size(), first_host ? DType::f32 : DType::i32,
                    ReduceOp::sum)
        .wait();
  });
}

/// Message schedules in which a rank waits on a peer's messages (ring, halving): rank 0
/// all-reduces 1.2 MiB (`zero`: nothing), the others 1 MiB. The ranks that find out abort the
/// communicator, so the others, left waiting on them, get the notice at once.
bool stranding_count_mismatch_refused(seam::comm::Communicator& comm, bool zero) {
  constexpr size_t kCount = 256 * 1024;
  std::vector<float> buffer(kCount * 6 / 5, 1.0f);
  const size_t first = zero ? 0 : buffer.size();
  const std::string what = std::string("count ") + (zero ? "0" : "1.2 MiB") + " vs 1 MiB";
  return ends_in_mismatch(comm, what, "disagree on count or dtype", [&] {
    comm.all_reduce(buffer.data(), buffer.data(), comm.rank() == 0 ? first : kCount, DType::f32,
                    ReduceOp::sum)
        .wait();
  });
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

/// The blocks disagreement with the ranks late by different amounts, longer than a wait takes
/// to send its notice, twice: the second call sets up a fresh region (the first failure dropped
/// it), where a late rank's notice could reach a peer before the schedule compared the calls.
/// The schedule's own check must still fail every rank alike and leave the communicator usable.
bool late_ranks_mismatch_detected(seam::comm::Communicator& comm) {
  const int me = comm.rank();
  const auto late = std::chrono::milliseconds(me == 0 ? 5 : me == 1 ? 0 : 40);
  bool ok = true;
  for (int i = 0; i < 2; ++i) {
    std::this_thread::sleep_for(late);
    ok &= blocks_mismatch_detected(comm, true, 1000);
  }
  return ok;
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

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool dtype_over_hosts = mode == "--dtype-over-hosts";
  try {
    auto comm = seam::comm::Communicator::create_world();
    // It leaves the communicator unusable: alone in its run; each rank reports for itself.
    if (mode == "--stranding-count" || mode == "--stranding-zero")
      return stranding_count_mismatch_refused(*comm, mode == "--stranding-zero") ? 0 : 1;
    // The shared-memory schedules compare full call signatures; with SEAM_ALGO (or UCX) the
    // calls go through messages, whose tags carry them.
    const bool shm_schedules = comm->transport_name() == "shm" && std::getenv("SEAM_ALGO") == nullptr;
    // Over hosts each rank reports for itself: the mismatch leaves the communicator unusable.
    if (comm->transport_name() == "shm+ucx" && std::getenv("SEAM_ALGO") == nullptr)
      return (dtype_over_hosts ? dtype_over_hosts_refused(*comm)
                               : mismatch_over_hosts_refused(*comm, mode == "--zero-over-hosts" ? 0 : 120))
                 ? 0
                 : 1;
    int ok = 1;
    if (comm->size() > 1) {
      ok &= mismatch_detected(*comm, 100, 120, DType::f32, DType::f32, ReduceOp::sum, ReduceOp::sum,
                              "count 100 vs 120");
      // A rank that passes nothing still exchanges (an empty message, a slot round) and fails.
      ok &= mismatch_detected(*comm, 0, 120, DType::f32, DType::f32, ReduceOp::sum, ReduceOp::sum,
                              "count 0 vs 120");
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
        ok &= late_ranks_mismatch_detected(*comm);
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
