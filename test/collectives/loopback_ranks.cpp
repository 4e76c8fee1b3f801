#include <cstdint>
#include "test/collectives/loopback_ranks.h"

#include <chrono>
#include <exception>
#include <thread>
#include <vector>

#include "transports/loopback/loopback_transport.h"

namespace seam::test {
namespace {

/// The whole loopback world as one group: group rank = world rank.
class LoopbackGroup final : public collectives::Group {
 public:
  explicit LoopbackGroup(transport::Transport& t) : t_(t) {}
  int rank() const override { return t_.rank(); }
  int size() const override { return t_.size(); }
  int world_rank(int r) const override { return r; }
  transport::RequestPtr isend(int peer, uint32_t step, const void* data, size_t bytes) override {
    return t_.isend(peer, step, data, bytes);
  }
  transport::RequestPtr irecv(int peer, uint32_t step, void* data, size_t bytes) override {
    return t_.irecv(peer, step, data, bytes);
  }
  std::string_view transport_name() const override { return "loopback"; }

 private:
  transport::Transport& t_;
};

void drive(transport::Transport& t, const MakeSchedule& make) {
  LoopbackGroup group(t);
  comm::Task task = make(t.rank(), group);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!task.step()) {
    t.progress();
    t.wait_for_activity(std::chrono::microseconds(200));
    if (std::chrono::steady_clock::now() > deadline)
      throw TimeoutError("loopback rank " + std::to_string(t.rank()) + " timed out",
                         task.blocking_peer());
  }
}

}  // namespace

void run_on_ranks(int n, const MakeSchedule& make) {
  transport::LoopbackWorld world(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        drive(world.endpoint(r), make);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace seam::test
