// Passes file descriptors between the processes of one host (SCM_RIGHTS over abstract unix
// sockets): how ranks share CUDA VMM allocations and the communicator's abort page. A received
// descriptor is accepted only from the process the bootstrap said holds that rank (SO_PEERCRED).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace seam::transport::cuda_peer {

/// An open descriptor, closed with the object.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

class FdChannel {
 public:
  /// Listens on a fresh abstract socket; name() is what the peers connect to.
  FdChannel();
  ~FdChannel();
  FdChannel(const FdChannel&) = delete;
  FdChannel& operator=(const FdChannel&) = delete;
  const std::string& name() const { return name_; }

  /// Sends `mine` to every other rank and receives theirs (result indexed by rank; this rank's
  /// entry empty). names[r] and pids[r] are rank r's channel and process. Collective over the
  /// ranks; throws CommError when a peer does not deliver within `timeout`.
  std::vector<std::vector<UniqueFd>> exchange(int rank, const std::vector<std::string>& names,
                                              const std::vector<pid_t>& pids, const std::vector<int>& mine,
                                              std::chrono::milliseconds timeout);

 private:
  UniqueFd listener_;
  std::string name_;
};

}  // namespace seam::transport::cuda_peer
