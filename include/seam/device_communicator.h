// DeviceCommunicator: Seam's collectives on CUDA device memory among the ranks of one host, bound
// to a host Communicator (its bootstrap, ranks, deadlines and abort rules). Every call enqueues on
// the caller's stream and returns at once; the result is ordered on that stream, so a producer
// kernel before the call and a consumer after it need no host synchronisation. Calls never
// synchronise with the host or allocate, so a sequence of them can be captured in a CUDA graph.
//
// Buffers: any device memory of the communicator's GPU. Each call copies its input into Seam's
// own peer-mapped workspace (CUDA VMM, shared as file descriptors) and peers read it there, so
// user buffers need no registration and may change between graph replays.
//
// Every rank must issue the calls of one DeviceCommunicator in the same order, from one stream
// at a time. After a failure (a peer died, a deadline passed, abort()) the communicator is
// aborted: kernels in flight give up, later calls and graph replays return at once, and the
// failure is thrown by Work::wait/test, by check(), and by every later call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "seam/dtype.h"
#include "seam/norm.h"
#include "seam/tensor.h"
#include "seam/communicator.h"
#include "seam/work.h"

namespace seam::device {

class DeviceCommunicatorImpl;  // runtime-internal

/// Device-memory collectives of `host`'s ranks. In-place forms as on the host.
class DeviceCommunicator {
 public:
  /// Collective over host's ranks. `device` is this rank's CUDA ordinal (-1: the current device).
  /// Ranks on one host use peer memory; ranks spanning hosts stage every call through host memory.
  static std::shared_ptr<DeviceCommunicator> create(std::shared_ptr<comm::Communicator> host,
                                                    int device = -1);
  ~DeviceCommunicator();
  DeviceCommunicator(const DeviceCommunicator&) = delete;
  DeviceCommunicator& operator=(const DeviceCommunicator&) = delete;

  int rank() const;
  int size() const;
  /// This rank's CUDA ordinal.
  int device() const;
  /// The host communicator it was made from.
  comm::Communicator& host() const;
  /// "peer" (kernels over peer-mapped memory) or "staged" (through host memory and the host
  /// collectives, where peer access between the GPUs is missing: not graph-capturable).
  std::string_view path() const;

  /// recv[i] = op over ranks of send[i] (FP32 accumulation, ranks in order: identical bits on
  /// every rank).
  comm::Work all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                        cudaStream_t stream);
  /// recv (recv_count) = this rank's block of the reduction of send (size * recv_count).
  comm::Work reduce_scatter(const void* send, void* recv, size_t recv_count, DType dtype,
                            ReduceOp op, cudaStream_t stream);
  /// counts[r] elements land on rank r (zero allowed); send holds sum(counts).
  comm::Work reduce_scatterv(const void* send, void* recv, std::span<const size_t> counts,
                             DType dtype, ReduceOp op, cudaStream_t stream);
  /// recv (size * send_count) = every rank's send, in rank order.
  comm::Work all_gather(const void* send, void* recv, size_t send_count, DType dtype,
                        cudaStream_t stream);
  /// Rank r contributes counts[r] elements; recv holds sum(counts) in rank order.
  comm::Work all_gatherv(const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                         cudaStream_t stream);
  /// buffer on every rank = root's buffer.
  comm::Work broadcast(void* buffer, size_t count, DType dtype, int root, cudaStream_t stream);
  /// Sends count elements of buffer to rank `peer` (pipeline handoff), ordered on stream. Each
  /// send pairs with the peer's recv of the same count and dtype, in the order the two ranks issue
  /// them; a send holds its stream until the peer has the data, so two ranks that both send
  /// before they receive wait for each other until the deadline (order them as a pipeline does).
  comm::Work send(const void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream);
  /// Receives count elements from rank `peer` into buffer, ordered on stream.
  comm::Work recv(void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream);
  /// The fused boundary: residual := round(Σ partial) + residual (in place); out := RMSNorm of
  /// the FP32 sum (the same bits as all_reduce followed by kernels::cuda::add_rms_norm).
  /// Tensors are contiguous device views of one dtype and shape (rows x cols).
  comm::Work all_reduce_add_rms_norm(const Tensor& partial, const Tensor& residual,
                                     const kernels::RmsNormSpec& norm, const Tensor& out,
                                     cudaStream_t stream);
  /// The same with the per-token FP8 read (out.scales: rows floats on the device).
  comm::Work all_reduce_add_rms_norm_fp8(const Tensor& partial, const Tensor& residual,
                                         const kernels::RmsNormSpec& norm,
                                         const kernels::Fp8Rows& out, cudaStream_t stream);

  /// Throws the failure that aborted the communicator, if any (graph replays return no Work).
  void check() const;
  /// Aborts the communicator: kernels in flight on this rank give up, later calls fail.
  void abort(const std::string& reason);

  /// For the runtime only (it alone can make a DeviceCommunicatorImpl).
  explicit DeviceCommunicator(std::unique_ptr<DeviceCommunicatorImpl> impl);

 private:
  friend struct DeviceCommunicatorAccess;  // runtime-internal
  std::unique_ptr<DeviceCommunicatorImpl> impl_;
};

}  // namespace seam::device
