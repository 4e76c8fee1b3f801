// The small interface every transport implements: tagged, non-blocking point-to-point messages
// between world ranks, progress, and a blocking wait for activity (so waiting ranks do not
// starve others on an oversubscribed host).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace seam::transport {

/// Completion of one send or receive. Transports call complete()/fail(); users poll state().
class Request {
 public:
  enum class State : uint8_t { pending, done, failed };
  explicit Request(int peer) : peer_(peer) {}
  virtual ~Request() = default;

  State state() const { return state_.load(std::memory_order_acquire); }
  bool done() const { return state() == State::done; }
  bool failed() const { return state() == State::failed; }
  bool finished() const { return state() != State::pending; }
  /// World rank on the other side.
  int peer() const { return peer_; }
  /// Why it failed (empty unless failed()).
  const std::string& error() const { return error_; }
  /// Bytes actually received (receives only, valid once done()).
  size_t received_bytes() const { return received_bytes_; }

  void complete(size_t received_bytes = 0) {
    received_bytes_ = received_bytes;
    state_.store(State::done, std::memory_order_release);
  }
  void fail(std::string why) {
    error_ = std::move(why);
    state_.store(State::failed, std::memory_order_release);
  }

 private:
  std::atomic<State> state_{State::pending};
  int peer_;
  size_t received_bytes_ = 0;
  std::string error_;
};
using RequestPtr = std::shared_ptr<Request>;

/// How a transport learns its peers' addresses: an all-gather of small byte strings over the
/// bootstrap (implemented by runtime/bootstrap).
class AddressExchange {
 public:
  virtual ~AddressExchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Every rank's `mine`, indexed by rank. Collective over all ranks.
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
};

/// Moves bytes between world ranks. Messages between a pair with the same tag are delivered
/// in order; a receive must be posted with at least the sender's size (a smaller receive fails
/// the request with a size-mismatch error naming both sizes).
class Transport {
 public:
  virtual ~Transport() = default;
  /// "shm", "ucx", "loopback".
  virtual std::string_view name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Starts sending `bytes` at `data` to world rank `peer`; the buffer must stay valid until the
  /// request finishes.
  virtual RequestPtr isend(int peer, uint64_t tag, const void* data, size_t bytes) = 0;
  /// Posts a receive of up to `bytes` into `data` from world rank `peer` with `tag`.
  virtual RequestPtr irecv(int peer, uint64_t tag, void* data, size_t bytes) = 0;
  /// Advances communication; true when anything completed or arrived.
  virtual bool progress() = 0;
  /// Sleeps until something may have arrived for this rank, a peer woke it (Doorbells, where
  /// the transport has them), or `max` passed. Never busy-waits.
  virtual void wait_for_activity(std::chrono::microseconds max) = 0;
  /// Whether peer is reachable (and, for local peers, its process alive). A dead peer fails
  /// every pending request that involves it.
  virtual bool peer_alive(int peer) = 0;
  /// Why peer counts as lost, where the transport knows (its abort notice, the death of its
  /// process); empty otherwise.
  virtual std::string why_lost(int /*peer*/) { return {}; }
  /// The reason in another rank's abort notice, waiting up to `wait` (progressing) for one to
  /// arrive; empty when none did. A broken connection is often the exit of a peer that aborted,
  /// and the notice that names the cause may arrive just after the break, on another connection.
  virtual std::string abort_notice(std::chrono::milliseconds /*wait*/) { return {}; }
  /// The reason in another rank's abort notice once one has arrived (progress takes it in);
  /// empty otherwise (valid until the transport goes). An idle engine aborts on it: its
  /// communicators are unusable after it. Asked at every poll: it copies nothing.
  virtual std::string_view job_aborted() { return {}; }
  /// The tag of a message from world rank `peer` that arrived before any receive matched it and
  /// whose tag equals `tag` on the bits of `mask`, if there is one: how a caller that waits
  /// finds out that the peer sent under another tag (it called something else).
  virtual std::optional<uint64_t> unmatched_tag(int peer, uint64_t tag, uint64_t mask) = 0;
  /// Whether an unmatched message (peer, tag) is one the caller looks for.
  using UnmatchedFilter = bool (*)(void* context, int peer, uint64_t tag);
  /// The same from any peer: (peer, tag) of the oldest such message that `accept` takes, where
  /// the transport can tell; at least the oldest of each peer (of all, over UCX) is looked at.
  virtual std::optional<std::pair<int, uint64_t>> unmatched_from_any(uint64_t tag, uint64_t mask,
                                                                     UnmatchedFilter accept, void* context) {
    for (int p = 0; p < size(); ++p) {
      if (p == rank()) continue;
      const auto found = unmatched_tag(p, tag, mask);
      if (found && accept(context, p, *found)) return std::make_pair(p, *found);
    }
    return std::nullopt;
  }
};

}  // namespace seam::transport
