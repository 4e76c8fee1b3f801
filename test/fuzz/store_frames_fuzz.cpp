// libFuzzer target: arbitrary bytes from one connection through the TCP store server's frame
// parsing and message handling (runtime/bootstrap/tcp_store.cpp), delivered in pieces as recv
// would. Besides crashes and leaks, it checks what the server answers: well-formed frames with a
// server opcode, and nothing but CHALLENGE or ERROR to a peer that never proved the token.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "runtime/bootstrap/tcp_store.h"

using seam::bootstrap::StoreOp;

namespace {
[[noreturn]] void fail() { std::abort(); }

uint32_t read_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
}  // namespace

// Input: byte 0 = (piece size - 1) << 1 | starts authenticated; the rest is the byte stream.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool authenticated = data[0] & 1;
  const size_t piece = (data[0] >> 1) + 1u;
  const std::vector<uint8_t> out =
      seam::bootstrap::detail::serve_bytes_for_fuzzing(data + 1, size - 1, piece, authenticated);
  for (size_t off = 0; off < out.size();) {
    if (out.size() - off < 5) fail();
    const uint32_t len = read_u32(out.data() + off);
    if (len == 0 || len > seam::bootstrap::kMaxFrameBytes || out.size() - off - 4 < len) fail();
    const auto op = static_cast<StoreOp>(out[off + 4]);
    const bool handshake_reply = op == StoreOp::challenge || op == StoreOp::error;
    if (!handshake_reply && op != StoreOp::ok && op != StoreOp::values) fail();
    // The fuzzer cannot compute the proof (the server's nonce is random): no OK or VALUES.
    if (!authenticated && !handshake_reply) fail();
    off += 4 + len;
  }
  return 0;
}
