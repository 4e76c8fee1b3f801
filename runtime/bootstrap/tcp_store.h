// The TCP store: a tiny key-value server run by rank 0 for engines that start their own ranks.
//
// Wire format (both directions): a frame is a 4-byte little-endian body length, then the body.
// A body starts with a one-byte opcode; strings inside are a 4-byte length then the bytes.
//   client -> server: HELLO {u32 version, i32 rank, str client_nonce} | AUTH {str client_proof}
//                     | SET {str key, str value} | WAIT {i64 timeout_ms, u32 n, n x str key} | BYE {}
//   server -> client: CHALLENGE {str server_nonce, str server_proof} | OK {}
//                     | VALUES {u32 n, n x str value} | ERROR {str message}
// Mutual challenge-response over the job token, which never crosses the wire: the server proves
// itself first (HMAC-SHA256 of both nonces and the rank), so a process squatting the port gets
// nothing from a client but a nonce; then the client proves itself. Before that, a connection
// may send at most kMaxBytesBeforeAuth bytes and must finish within the auth timeout; at most
// max_unauthenticated such connections are kept (the oldest goes for a new one), so a flood of
// bad peers bounds rank 0's descriptors and memory and cannot keep the real ranks out (a client
// whose handshake is cut retries until its deadline). Rejections are logged at a bounded rate.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace seam::bootstrap {

constexpr uint32_t kStoreProtocolVersion = 2;
constexpr uint32_t kMaxFrameBytes = 16u << 20;
constexpr uint32_t kMaxKeyBytes = 4096;
constexpr uint32_t kNonceBytes = 32;
constexpr uint32_t kMaxBytesBeforeAuth = 256;
/// SEAM_JOB_TOKEN: at least this many characters (32 hex digits: 128 random bits).
constexpr size_t kMinJobTokenChars = 32;

enum class StoreOp : uint8_t {
  hello = 1,
  set = 2,
  wait = 3,
  bye = 4,
  auth = 5,
  ok = 0x80,
  values = 0x81,
  error = 0x82,
  challenge = 0x83,
};

/// Throws ValueError unless `token` is long and varied enough to be a random secret.
void check_job_token(const std::string& token);

/// What an unauthenticated peer may hold of the server.
struct StoreLimits {
  int max_unauthenticated = 64;
  std::chrono::milliseconds auth_timeout{5000};
};

/// host:port -> (host, port); throws ValueError when malformed.
std::pair<std::string, uint16_t> parse_host_port(const std::string& addr);

namespace detail {
/// The fuzz target's entry (test/fuzz/): `data` as one connection sends it, delivered in pieces of
/// `piece` bytes as recv might return them, through the server's frame parsing and message
/// handling, without a socket or a thread. `authenticated`: the connection starts as rank 0's
/// after its handshake (which needs the token, so fuzzing could not reach SET/WAIT otherwise).
/// Returns the reply frames the server wrote.
std::vector<uint8_t> serve_bytes_for_fuzzing(const uint8_t* data, size_t size, size_t piece, bool authenticated);
}  // namespace detail

/// The server: a thread polling every connection. Binds in the constructor (throws CommError
/// when it cannot), serves until stop() or destruction.
class StoreServer {
 public:
  /// `addr` must name an address of this host (or a wildcard such as 0.0.0.0): another host's
  /// address is a CommError, not a silent listen on every interface.
  StoreServer(const std::string& addr, int world_size, std::string token, StoreLimits limits = {});
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
  friend std::vector<uint8_t> detail::serve_bytes_for_fuzzing(const uint8_t*, size_t, size_t, bool);
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
  /// Proves the server knows `token`, then proves this client does. Throws CommError.
  void authenticate(int rank, const std::string& token, std::chrono::milliseconds timeout);
  int fd_ = -1;
  std::string addr_;
};

}  // namespace seam::bootstrap
