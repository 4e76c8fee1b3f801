// Loopback transport: threads of one process play the ranks (unit tests of the collective
// algorithms without processes). Sends are eager: the bytes are copied at isend, so a send
// completes at once and a receive completes when its message is there.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "transports/transport.h"

namespace seam::transport {

class LoopbackTransport;

/// The shared state of n loopback ranks; endpoint(r) is rank r's transport.
class LoopbackWorld {
 public:
  explicit LoopbackWorld(int size);
  ~LoopbackWorld();
  int size() const { return static_cast<int>(endpoints_.size()); }
  Transport& endpoint(int rank);

 private:
  friend class LoopbackTransport;
  struct PostedRecv {
    void* data;
    size_t bytes;
    RequestPtr request;
  };
  using Channel = std::tuple<int, int, uint64_t>;  // (source, destination, tag)
  /// Delivers `bytes` from src to dst under tag, or queues it until a matching receive.
  void deliver(int src, int dst, uint64_t tag, const void* data, size_t bytes);
  RequestPtr post_recv(int src, int dst, uint64_t tag, void* data, size_t bytes);
  std::optional<uint64_t> unmatched_tag(int src, int dst, uint64_t tag, uint64_t mask);
  void wait(std::chrono::microseconds max);

  std::mutex mutex_;
  std::condition_variable activity_;
  uint64_t generation_ = 0;  // bumped on every delivery, so sleepers notice
  std::map<Channel, std::deque<std::vector<char>>> unexpected_;
  std::map<Channel, std::deque<PostedRecv>> posted_;
  std::vector<std::unique_ptr<LoopbackTransport>> endpoints_;
};

}  // namespace seam::transport
