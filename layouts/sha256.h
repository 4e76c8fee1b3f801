// SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104): the TCP store's challenge-response and the
// unguessable names of shared-memory blocks. Small and dependency-free: no crypto library is
// linked otherwise.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace seam {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  void update(std::string_view s) { update(s.data(), s.size()); }
  Sha256Digest finish();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

Sha256Digest sha256(std::string_view data);
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);
/// Lower-case hex of `bytes`.
std::string to_hex(const uint8_t* bytes, size_t n);
/// Compares in time that depends only on the lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace seam
