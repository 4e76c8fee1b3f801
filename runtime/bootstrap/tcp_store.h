// The TCP store: a tiny key-value server run by rank 0 for engines that start their own ranks.
//
// Wire format (both directions): a frame is a 4-byte little-endian body length, then the body.
// A body starts with a one-byte opcode; strings inside are a 4-byte length then the bytes.
//   client -> server: HELLO {u32 version, i32 rank, str token} | SET {str key, str value}
//                     | WAIT {i64 timeout_ms, u32 n, n x str key} | BYE {}
//   server -> client: OK {} | VALUES {u32 n, n x str value} | ERROR {str message}
// The first frame of a connection must be a HELLO with the job's token (compared in constant
// time); anything else, a frame over kMaxFrameBytes, or a body whose fields overrun it gets an
// ERROR frame with a clear message and the connection is closed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace seam::bootstrap {

constexpr uint32_t kStoreProtocolVersion = 1;
constexpr uint32_t kMaxFrameBytes = 16u << 20;
constexpr uint32_t kMaxKeyBytes = 4096;

enum class StoreOp : uint8_t {
  hello = 1,
  set = 2,
  wait = 3,
  bye = 4,
  ok = 0x80,
  values = 0x81,
  error = 0x82,
};

/// host:port -> (host, port); throws ValueError when malformed.
std::pair<std::string, uint16_t> parse_host_port(const std::string& addr);

/// The server: a thread polling every connection. Binds in the constructor (throws CommError
/// when it cannot), serves until stop() or destruction.
class StoreServer {
 public:
  StoreServer(const std::string& addr, int world_size, std::string token);
  ~StoreServer();
  /// Returns once every rank 0..world_size-1 said BYE or disconnected after authenticating,
  /// or `timeout` passed (false then).
  bool wait_all_left(std::chrono::milliseconds timeout);
  void stop();
  /// Port actually bound.
  uint16_t port() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// A client connection; every call throws CommError (server error, lost connection) or
/// TimeoutError.
class StoreClient {
 public:
  /// Connects (retrying until `timeout` while the server is not up yet) and authenticates.
  StoreClient(const std::string& addr, int rank, const std::string& token,
              std::chrono::milliseconds timeout);
  ~StoreClient();
  void set(const std::string& key, const std::string& value);
  /// Values of `keys`, waiting until all exist or `timeout` passes.
  std::vector<std::string> wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  std::string get(const std::string& key, std::chrono::milliseconds timeout) {
    return wait({key}, timeout).at(0);
  }
  /// Says goodbye and closes.
  void close();

 private:
  std::vector<uint8_t> request(const std::vector<uint8_t>& body, std::chrono::milliseconds timeout);
  int fd_ = -1;
  std::string addr_;
};

}  // namespace seam::bootstrap
