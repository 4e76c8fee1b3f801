// Communicator: a group of ranks and its collectives on host (and, with CUDA, device) memory.
// Created from the environment (under mpirun, or from a TCP store for engines that start their
// own ranks); sub-groups by rank list or split(color, key). Every collective is non-blocking
// and returns a Work; `.wait()` makes it blocking. Every rank must issue the collectives of one
// communicator in the same order, from one thread at a time (another thread takes a
// duplicate()). In-place calls follow NCCL: all_reduce send == recv; reduce_scatter(v) recv ==
// send + this rank's block offset; all_gather(v) send == recv + this rank's block offset. After a
// CommError or TimeoutError the communicator is aborted: later calls fail at once.
#pragma once

#include <cstdint>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "seam/dtype.h"
#include "seam/work.h"

namespace seam::comm {

/// How to bootstrap. Unset fields come from the environment (SEAM_* or mpirun's).
struct BootstrapOptions {
  std::string store_addr;  ///< host:port of the TCP store (rank 0 serves it)
  int rank = -1;
  int world_size = -1;
  std::string job_token;   ///< every peer must present it
};

class CommunicatorImpl;  // runtime-internal

class Communicator {
 public:
  /// The world communicator: TCP store if SEAM_STORE_ADDR (or options.store_addr) is set,
  /// else mpirun's environment. Collective over all ranks.
  static std::shared_ptr<Communicator> create_world(const BootstrapOptions& options = {});

  ~Communicator();
  /// This process's rank in the communicator, and the number of ranks.
  int rank() const;
  int size() const;
  /// World rank of this communicator's rank r.
  int world_rank(int r) const;
  /// Transport between this communicator's ranks: "shm" when they all share a host (also in a
  /// job that spans hosts), "ucx" when no two do, "shm+ucx" for a mix.
  std::string transport_name() const;

  /// Sub-group of the given ranks (of this communicator, in that order); collective over the
  /// members only. Returns nullptr on ranks not listed.
  std::shared_ptr<Communicator> group(std::span<const int> ranks);
  /// MPI_Comm_split semantics: ranks with the same color form a group ordered by (key, rank).
  /// Collective over all ranks. A negative color returns nullptr.
  std::shared_ptr<Communicator> split(int color, int key);
  /// The same ranks over connections and an engine of their own. A communicator and its
  /// sub-groups are driven from one thread at a time; a duplicate (and its sub-groups) may be
  /// driven from another thread meanwhile. Collective.
  std::shared_ptr<Communicator> duplicate();

  /// recv[i] = op over ranks of send[i], i < count (bf16/f16 accumulated in FP32).
  Work all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op);
  /// recv (recv_count elements) = this rank's block of the reduction of send (size * recv_count).
  Work reduce_scatter(const void* send, void* recv, size_t recv_count, DType dtype, ReduceOp op);
  /// counts[r] elements land on rank r (zero allowed); send holds sum(counts).
  Work reduce_scatterv(const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                       ReduceOp op);
  /// recv (size * send_count) = every rank's send, in rank order.
  Work all_gather(const void* send, void* recv, size_t send_count, DType dtype);
  /// Rank r contributes counts[r] elements; recv holds sum(counts) in rank order.
  Work all_gatherv(const void* send, void* recv, std::span<const size_t> counts, DType dtype);
  /// buffer on every rank = root's buffer.
  Work broadcast(void* buffer, size_t count, DType dtype, int root);
  /// Rank r receives counts[r] elements of root's send, in rank order.
  Work scatterv(const void* send, void* recv, std::span<const size_t> counts, DType dtype, int root);
  /// Completes once every rank has entered.
  Work barrier();
  /// Point-to-point (pipeline handoff): bytes to/from rank `peer` of this communicator.
  Work send(const void* data, size_t bytes, int peer, uint32_t tag = 0);
  Work recv(void* data, size_t bytes, int peer, uint32_t tag = 0);

  /// For the runtime only (it alone can make a CommunicatorImpl).
  explicit Communicator(std::unique_ptr<CommunicatorImpl> impl);

 private:
  friend struct CommunicatorAccess;  // runtime-internal
  std::unique_ptr<CommunicatorImpl> impl_;
};

}  // namespace seam::comm
