#include <cstdint>
#include "transports/loopback/loopback_transport.h"

#include <cstring>
#include <string>

namespace seam::transport {

namespace {

/// Copies a message into a receive, or fails it the way every transport does on a short buffer.
void fill(const RequestPtr& request, void* dst, size_t capacity, const void* src, size_t bytes) {
  if (bytes > capacity) {
    request->fail("size mismatch: peer " + std::to_string(request->peer()) + " sent " +
                  std::to_string(bytes) + " bytes, receive posted for " +
                  std::to_string(capacity));
    return;
  }
  if (bytes) std::memcpy(dst, src, bytes);
  request->complete(bytes);
}

}  // namespace

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(LoopbackWorld& world, int rank) : world_(world), rank_(rank) {}
  std::string_view name() const override { return "loopback"; }
  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  RequestPtr isend(int peer, uint64_t tag, const void* data, size_t bytes) override {
    world_.deliver(rank_, peer, tag, data, bytes);
    auto request = std::make_shared<Request>(peer);
    request->complete();
    return request;
  }
  RequestPtr irecv(int peer, uint64_t tag, void* data, size_t bytes) override {
    return world_.post_recv(peer, rank_, tag, data, bytes);
  }
  bool progress() override { return false; }  // delivery happens inside isend
  void wait_for_activity(std::chrono::microseconds max) override { world_.wait(max); }
  bool peer_alive(int) override { return true; }
  std::optional<uint64_t> unmatched_tag(int peer, uint64_t tag, uint64_t mask) override {
    return world_.unmatched_tag(peer, rank_, tag, mask);
  }

 private:
  LoopbackWorld& world_;
  int rank_;
};

LoopbackWorld::LoopbackWorld(int size) {
  for (int r = 0; r < size; ++r) endpoints_.push_back(std::make_unique<LoopbackTransport>(*this, r));
}

LoopbackWorld::~LoopbackWorld() = default;

Transport& LoopbackWorld::endpoint(int rank) { return *endpoints_.at(rank); }

void LoopbackWorld::deliver(int src, int dst, uint64_t tag, const void* data, size_t bytes) {
  std::lock_guard lock(mutex_);
  auto& waiting = posted_[{src, dst, tag}];
  if (!waiting.empty()) {
    PostedRecv recv = waiting.front();
    waiting.pop_front();
    fill(recv.request, recv.data, recv.bytes, data, bytes);
  } else {
    const char* p = static_cast<const char*>(data);
    unexpected_[{src, dst, tag}].emplace_back(p, p + bytes);
  }
  ++generation_;
  activity_.notify_all();
}

std::optional<uint64_t> LoopbackWorld::unmatched_tag(int src, int dst, uint64_t tag, uint64_t mask) {
  std::lock_guard lock(mutex_);
  for (const auto& [channel, queued] : unexpected_)
    if (std::get<0>(channel) == src && std::get<1>(channel) == dst && !queued.empty() &&
        (std::get<2>(channel) & mask) == (tag & mask))
      return std::get<2>(channel);
  return std::nullopt;
}

RequestPtr LoopbackWorld::post_recv(int src, int dst, uint64_t tag, void* data, size_t bytes) {
  auto request = std::make_shared<Request>(src);
  std::lock_guard lock(mutex_);
  auto& queued = unexpected_[{src, dst, tag}];
  if (!queued.empty()) {
    fill(request, data, bytes, queued.front().data(), queued.front().size());
    queued.pop_front();
  } else {
    posted_[{src, dst, tag}].push_back({data, bytes, request});
  }
  return request;
}

void LoopbackWorld::wait(std::chrono::microseconds max) {
  std::unique_lock lock(mutex_);
  uint64_t seen = generation_;
  activity_.wait_for(lock, max, [&] { return generation_ != seen; });
}

}  // namespace seam::transport
