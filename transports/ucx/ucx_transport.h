// UCX transport (UCP): one context and worker per process, worker addresses exchanged through the
// bootstrap, one endpoint per peer with peer error handling, tagged send/recv, and the worker's
// wake-up fd for blocking waits. Works over whatever UCX finds (shared memory, TCP, RDMA).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transports/transport.h"

namespace seam::ucx {

/// Transport tags may use the low kTagBits bits; the UCX tag carries the source rank above them.
/// The tag with all 48 bits set is reserved (abort notices).
constexpr int kTagBits = 48;

class UcxTransport : public transport::Transport {
 public:
  /// Collective over every rank of `exchange`. `hosts[r]`/`pids[r]`: every rank's host identity
  /// and pid, so that local peers can be watched through their pids (UCX's own shared-memory
  /// transports do not notice a dead peer). `same_host_traffic`: whether messages between ranks
  /// of one host go through UCX too (else only those between hosts: over TCP they then go eager
  /// up to 1 MiB where TCP is the only network, unless UCX_RNDV_THRESH says otherwise).
  static std::unique_ptr<UcxTransport> create(transport::AddressExchange& exchange,
                                              const std::vector<std::string>& hosts,
                                              const std::vector<int>& pids,
                                              std::chrono::milliseconds timeout,
                                              bool same_host_traffic);
  /// UCX's transports in use (e.g. "tcp,posix,sysv,cma,self") for logs and seam_info.
  virtual std::string describe() const = 0;
  /// For a caller that sleeps on something else too (the shm+ucx composite): arms the worker's
  /// wake-up; false when events are already waiting (progress instead of sleeping). Once armed,
  /// event_fd() becomes readable when something arrives.
  virtual bool arm() = 0;
  virtual int event_fd() const = 0;
  /// Tells every peer that this rank aborted (why): their pending requests fail with it. Ignored
  /// when the abort came from another rank.
  virtual void broadcast_abort(const std::string& reason) = 0;
};

/// UCX's version string (for seam_info and logs).
std::string version();
/// The transports UCX finds on this machine, as "transport/device" (e.g. "tcp/eth0", "posix/memory").
std::vector<std::string> available_transports();
/// Whether the UCX found at run time moves CUDA device memory itself (built with CUDA support).
/// Seam does not use it yet: device calls across hosts stage through pinned host memory.
bool cuda_memory_supported();

}  // namespace seam::ucx
