// Shared memory to the peers on this host, UCX to the others: one Transport routing by peer.
#pragma once

#include <cstdint>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "transports/doorbells.h"
#include "transports/shm/shm_transport.h"
#include "transports/transport.h"
#include "transports/ucx/ucx_transport.h"

namespace seam::comm {

/// Waiting sleeps on the shm futex; a helper thread watches UCX's wake-up fd meanwhile and rings
/// this rank's own shm doorbell when UCX has something, so neither path waits for a time slice.
class CompositeTransport final : public transport::Transport, public transport::Doorbells {
 public:
  CompositeTransport(std::unique_ptr<shm::ShmTransport> shm, std::unique_ptr<ucx::UcxTransport> remote);
  ~CompositeTransport() override;
  std::string_view name() const override { return "shm+ucx"; }
  int rank() const override { return shm_->rank(); }
  int size() const override { return shm_->size(); }
  transport::RequestPtr isend(int peer, uint64_t tag, const void* data, size_t bytes) override {
    return route(peer).isend(peer, tag, data, bytes);
  }
  transport::RequestPtr irecv(int peer, uint64_t tag, void* data, size_t bytes) override {
    return route(peer).irecv(peer, tag, data, bytes);
  }
  bool progress() override;
  void wait_for_activity(std::chrono::microseconds max) override;
  /// Arms UCX's event first: where events wait, there is nothing to mark (and no fence to pay).
  bool mark_asleep(bool asleep) override {
    if (asleep && !remote_->arm()) return false;
    return shm_->mark_asleep(asleep);
  }
  bool any_asleep(std::span<const int> world_ranks) override { return shm_->any_asleep(world_ranks); }
  void wake_if_sleeping(std::span<const int> world_ranks) override {
    shm_->wake_if_sleeping(world_ranks);
  }
  /// Only the peers on this host can run on this rank's CPU.
  bool peer_on_cpu(int cpu) override { return shm_->peer_on_cpu(cpu); }
  bool peer_alive(int peer) override { return route(peer).peer_alive(peer); }
  std::string why_lost(int peer) override { return route(peer).why_lost(peer); }
  /// Only other hosts' notices can trail a broken connection: a local peer's abort is in shared
  /// memory before its process exits.
  std::string_view job_aborted() override {
    const std::string_view local = shm_->job_aborted();
    return local.empty() ? remote_->job_aborted() : local;
  }
  std::string abort_notice(std::chrono::milliseconds wait) override {
    return remote_->abort_notice(wait);
  }
  std::optional<uint64_t> unmatched_tag(int peer, uint64_t tag, uint64_t mask) override {
    return route(peer).unmatched_tag(peer, tag, mask);
  }
  std::optional<std::pair<int, uint64_t>> unmatched_from_any(uint64_t tag, uint64_t mask, UnmatchedFilter accept,
                                                             void* context) override {
    if (auto found = shm_->unmatched_from_any(tag, mask, accept, context)) return found;
    return remote_->unmatched_from_any(tag, mask, accept, context);
  }
  shm::ShmTransport& shm() { return *shm_; }

 private:
  transport::Transport& route(int peer) {
    return local_[static_cast<size_t>(peer)] ? static_cast<transport::Transport&>(*shm_) : *remote_;
  }
  void watch_remote();

  std::unique_ptr<shm::ShmTransport> shm_;
  std::unique_ptr<ucx::UcxTransport> remote_;
  std::vector<char> local_;
  // The helper thread: watches remote_->event_fd() while `watching_`.
  std::thread watcher_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> watching_{false};
  bool stop_ = false;
  int stop_fd_ = -1;
};

}  // namespace seam::comm
