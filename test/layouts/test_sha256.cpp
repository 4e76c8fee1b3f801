// SHA-256 and HMAC-SHA256 against the published vectors (FIPS 180-4 examples, RFC 4231).
#include <doctest/doctest.h>

#include <string>

#include "layouts/sha256.h"

using seam::hmac_sha256;
using seam::sha256;

namespace {
std::string hex(const seam::Sha256Digest& d) { return seam::to_hex(d.data(), d.size()); }
}  // namespace

TEST_CASE("sha256: FIPS 180-4 vectors") {
  CHECK(hex(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex(sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hex(sha256(std::string(1000000, 'a'))) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("hmac-sha256: RFC 4231 vectors") {
  CHECK(hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(hex(hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // A key longer than the block is hashed first (test case 6).
  CHECK(hex(hmac_sha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST_CASE("constant_time_equal") {
  CHECK(seam::constant_time_equal("abc", "abc"));
  CHECK_FALSE(seam::constant_time_equal("abc", "abd"));
  CHECK_FALSE(seam::constant_time_equal("ab", "abc"));
  CHECK_FALSE(seam::constant_time_equal("abcd", "abc"));
}
