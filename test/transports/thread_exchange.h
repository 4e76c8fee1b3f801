// An AddressExchange for threads of one process acting as ranks (unit tests).
#pragma once

#include <cstdint>

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "transports/transport.h"

namespace seam::test {

class ThreadExchangeHub {
 public:
  explicit ThreadExchangeHub(int n) : n_(n), slots_(static_cast<size_t>(n)) {}
  std::vector<std::string> all_gather(int rank, const std::string& mine) {
    std::unique_lock lk(mu_);
    const uint64_t round = round_;
    slots_[static_cast<size_t>(rank)] = mine;
    if (++arrived_ == n_) {
      result_ = slots_;
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
    } else {
      cv_.wait(lk, [&] { return round_ != round; });
    }
    return result_;
  }
  int size() const { return n_; }

 private:
  int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> slots_, result_;
  int arrived_ = 0;
  uint64_t round_ = 0;
};

class ThreadExchange final : public transport::AddressExchange {
 public:
  ThreadExchange(ThreadExchangeHub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_.size(); }
  std::vector<std::string> all_gather(const std::string& mine) override { return hub_.all_gather(rank_, mine); }

 private:
  ThreadExchangeHub& hub_;
  int rank_;
};

}  // namespace seam::test
