// The reduction kernels of every instruction set this CPU has, against a scalar reference that
// folds the sources in the same order in the accumulator type (FP32 for bf16/f16, rounding
// once): results must match bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <vector>

#include "kernels/reduce/cache_size.h"
#include "kernels/reduce/reduce.h"
#include "seam/errors.h"
#include "test/collectives/reference.h"
#include "layouts/element_values.h"

namespace seam::test {
namespace {

constexpr DType kDtypes[] = {DType::f32, DType::f64, DType::i32, DType::bf16, DType::f16};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min};
constexpr kernels::ReduceIsa kIsas[] = {kernels::ReduceIsa::generic, kernels::ReduceIsa::avx2,
                                        kernels::ReduceIsa::avx512,
                                        kernels::ReduceIsa::avx512bf16};

template <class A>
A apply(ReduceOp op, A a, A b) {
  if (op == ReduceOp::max) return a > b ? a : b;
  if (op == ReduceOp::min) return a < b ? a : b;
  return a + b;
}

/// The reference result, as the dtype's bytes.
std::vector<char> reference(const std::vector<std::vector<char>>& srcs, size_t count, DType dtype,
                            ReduceOp op) {
  std::vector<char> out(count * dtype_size(dtype));
  for (size_t i = 0; i < count; ++i) {
    if (dtype == DType::f64) {
      double acc = element_value(srcs[0].data(), i, dtype);
      for (size_t k = 1; k < srcs.size(); ++k)
        acc = apply(op, acc, element_value(srcs[k].data(), i, dtype));
      set_element_value(out.data(), i, dtype, acc);
    } else if (dtype == DType::i32) {
      int64_t acc = static_cast<int64_t>(element_value(srcs[0].data(), i, dtype));
      for (size_t k = 1; k < srcs.size(); ++k)
        acc =
            apply<int64_t>(op, acc, static_cast<int64_t>(element_value(srcs[k].data(), i, dtype)));
      set_element_value(out.data(), i, dtype, static_cast<double>(acc));
    } else {
      float acc = static_cast<float>(element_value(srcs[0].data(), i, dtype));
      for (size_t k = 1; k < srcs.size(); ++k)
        acc = apply(op, acc, static_cast<float>(element_value(srcs[k].data(), i, dtype)));
      set_element_value(out.data(), i, dtype, acc);
    }
  }
  return out;
}

std::vector<const void*> pointers(const std::vector<std::vector<char>>& srcs) {
  std::vector<const void*> p;
  for (const auto& s : srcs) p.push_back(s.data());
  return p;
}

}  // namespace

TEST_CASE("reduction kernels match the scalar reference on every instruction set") {
  for (auto isa : kIsas) {
    if (!kernels::reduce_isa_supported(isa)) continue;
    for (DType dtype : kDtypes)
      for (ReduceOp op : kOps)
        for (size_t nsrc : {1, 2, 3, 4, 5, 7, 8, 11})
          for (size_t count : {0, 1, 15, 33, 2049, 5000}) {
            CAPTURE(kernels::reduce_isa_name(isa));
            CAPTURE(dtype_name(dtype));
            CAPTURE(reduce_op_name(op));
            CAPTURE(nsrc);
            CAPTURE(count);
            std::vector<std::vector<char>> srcs;
            for (size_t k = 0; k < nsrc; ++k)
              srcs.push_back(make_input(dtype, count, static_cast<int>(k), dtype != DType::i32));
            std::vector<char> out(count * dtype_size(dtype) + 1, 0x5a);
            kernels::reduce(isa, out.data(), pointers(srcs), count, dtype, op);
            auto expected = reference(srcs, count, dtype, op);
            CHECK((expected.empty() || std::memcmp(out.data(), expected.data(), expected.size()) == 0));
            CHECK(out.back() == 0x5a);  // nothing written past count

            // Non-temporal stores (whole lines of dst, a short first block up to its first line
            // boundary), to a destination misaligned by one element.
            std::vector<char> streamed(expected.size() + 64, 0x5a);
            char* misaligned = streamed.data() + dtype_size(dtype);
            kernels::reduce(isa, misaligned, pointers(srcs), count, dtype, op, kernels::Store::streaming);
            CHECK((expected.empty() || std::memcmp(misaligned, expected.data(), expected.size()) == 0));
            CHECK(misaligned[expected.size()] == 0x5a);

            // dst aliasing the last source (what in-place algorithms do), then the first (past
            // four sources, read in the first group and written in the last).
            for (bool first : {false, true}) {
              auto copies = srcs;
              std::vector<const void*> p = pointers(copies);
              void* dst = const_cast<void*>(first ? p.front() : p.back());
              kernels::reduce(isa, dst, p, count, dtype, op);
              CHECK((expected.empty() || std::memcmp(dst, expected.data(), expected.size()) == 0));
            }
          }
  }
}

TEST_CASE("streaming reductions write exactly their elements at every alignment of dst") {
  // Streaming kernels fold 1 KiB blocks, the first one short up to dst's first line boundary:
  // counts around a block and every element offset within a line reach each edge. Those that
  // keep the result too (reduce_and_keep) leave it in `kept`, and nothing past it.
  for (auto isa : kIsas) {
    if (!kernels::reduce_isa_supported(isa)) continue;
    for (DType dtype : kDtypes) {
      const size_t es = dtype_size(dtype), block = 1024 / es;
      for (size_t nsrc : {1, 2, 5})
        for (size_t count : {size_t{1}, size_t{15}, block - 1, block, block + 1, 2 * block + 7})
          for (size_t offset = 0; offset < 64; offset += es) {
            CAPTURE(kernels::reduce_isa_name(isa));
            CAPTURE(dtype_name(dtype));
            CAPTURE(nsrc);
            CAPTURE(count);
            CAPTURE(offset);
            std::vector<std::vector<char>> srcs;
            for (size_t k = 0; k < nsrc; ++k)
              srcs.push_back(make_input(dtype, count, static_cast<int>(k), dtype != DType::i32));
            const auto expected = reference(srcs, count, dtype, ReduceOp::sum);
            constexpr size_t kGuard = 64;  // bytes on each side that must stay as they were
            std::vector<char> storage(64 + kGuard + 64 + expected.size() + kGuard, 0x5a);
            const size_t to_line = (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
            char* dst = storage.data() + to_line + kGuard + offset;
            // The result is in `at`, and every byte of `buffer` around it as it was.
            auto holds_exactly = [&](const std::vector<char>& buffer, const char* at) {
              CHECK(std::memcmp(at, expected.data(), expected.size()) == 0);
              size_t touched = 0;
              for (const char* c = buffer.data(); c < at; ++c) touched += *c != 0x5a;
              for (const char* c = at + expected.size(); c < buffer.data() + buffer.size(); ++c)
                touched += *c != 0x5a;
              CHECK(touched == 0);
            };
            kernels::reduce(isa, dst, pointers(srcs), count, dtype, ReduceOp::sum,
                            kernels::Store::streaming);
            holds_exactly(storage, dst);

            // `kept` one element further into its line than dst, so its blocks straddle lines
            // differently.
            std::fill(storage.begin(), storage.end(), 0x5a);
            std::vector<char> kept(storage.size(), 0x5a);
            char* keep_at = kept.data() +
                            (64 - reinterpret_cast<uintptr_t>(kept.data()) % 64) % 64 + kGuard +
                            (offset + es) % 64;
            kernels::reduce_and_keep(isa, dst, keep_at, pointers(srcs), count, dtype,
                                     ReduceOp::sum);
            holds_exactly(storage, dst);
            holds_exactly(kept, keep_at);
          }
    }
  }
}

TEST_CASE("bf16 sums round once to nearest even, overflow to infinity and keep NaN, on every set") {
  // {a, b, a + b} in bf16 bits; 43 elements reach the 32-wide, the 8-wide and the scalar paths.
  struct Case {
    uint16_t a, b, sum;
  };
  constexpr Case kCases[] = {
      {0x3f80, 0x3b80, 0x3f80},  // 1 + 2^-8: a tie, to the even 1
      {0x3f81, 0x3b80, 0x3f82},  // 1.0078125 + 2^-8: a tie, to the even 1.015625
      {0x3f80, 0x3c00, 0x3f81},  // exact
      {0xbf80, 0x3b80, 0xbf7f},  // -1 + 2^-8, exact
      {0x7f80, 0x3f80, 0x7f80},  // inf + 1
      {0x7f7f, 0x7f7f, 0x7f80},  // the largest finite twice: infinity
      {0x7fc1, 0x3f80, 0x7fc1},  // quiet NaN + 1
      {0x7f81, 0x3f80, 0x7fc1},  // signalling NaN + 1: quieted
      {0xbf80, 0xbb80, 0xbf80},  // -1 - 2^-8: a tie, to the even -1
  };
  constexpr size_t kCount = 43;
  std::vector<uint16_t> a(kCount), b(kCount), expected(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    const Case& c = kCases[i % std::size(kCases)];
    a[i] = c.a, b[i] = c.b, expected[i] = c.sum;
  }
  for (auto isa : kIsas) {
    if (!kernels::reduce_isa_supported(isa)) continue;
    CAPTURE(kernels::reduce_isa_name(isa));
    for (auto store : {kernels::Store::cached, kernels::Store::streaming}) {
      std::vector<uint16_t> out(kCount);
      const void* srcs[2] = {a.data(), b.data()};
      kernels::reduce(isa, out.data(), srcs, kCount, DType::bf16, ReduceOp::sum, store);
      for (size_t i = 0; i < kCount; ++i) {
        CAPTURE(i);
        CHECK(out[i] == expected[i]);
      }
    }
  }
}

TEST_CASE("bf16 and f16 sums in the denormal range: kept, but flushed by AVX-512 BF16's rounding") {
  // {a, b, a + b}: bf16 below 2^-126 (FP32's denormals, as the sum is accumulated), f16 below
  // 2^-14, which FP32 holds exactly. The avx512bf16 set rounds bf16 with vcvtne2ps2bf16, which
  // flushes FP32 denormals, in its whole steps of 32 elements; the 6 elements past them are
  // rounded as every other set rounds.
  struct Case {
    DType dtype;
    uint16_t a, b, sum, flushed;  // flushed: the bf16 sum in the avx512bf16 set's vector steps
  };
  constexpr Case kCases[] = {
      {DType::bf16, 0x0001, 0x0001, 0x0002, 0x0000},  // the smallest denormal twice
      {DType::bf16, 0x8003, 0x0001, 0x8002, 0x8000},  // a negative denormal sum
      {DType::bf16, 0x0040, 0x0040, 0x0080, 0x0080},  // two denormals make the smallest normal
      {DType::f16, 0x0001, 0x0001, 0x0002, 0x0002},   // f16 denormals are FP32 normals
      {DType::f16, 0x8003, 0x0001, 0x8002, 0x8002},
  };
  constexpr size_t kCount = 70, kVectorSteps = 64;
  for (const Case& c : kCases) {
    CAPTURE(dtype_name(c.dtype));
    CAPTURE(c.a);
    CAPTURE(c.b);
    const std::vector<uint16_t> a(kCount, c.a), b(kCount, c.b);
    for (auto isa : kIsas) {
      if (!kernels::reduce_isa_supported(isa)) continue;
      CAPTURE(kernels::reduce_isa_name(isa));
      std::vector<uint16_t> out(kCount);
      const void* srcs[2] = {a.data(), b.data()};
      kernels::reduce(isa, out.data(), srcs, kCount, c.dtype, ReduceOp::sum);
      for (size_t i = 0; i < kCount; ++i) {
        CAPTURE(i);
        const bool flushes = isa == kernels::ReduceIsa::avx512bf16 && i < kVectorSteps;
        CHECK(out[i] == (flushes ? c.flushed : c.sum));
      }
    }
  }
}

TEST_CASE("reduce_into and reduce2 are the two-source reduction") {
  auto a = make_input(DType::bf16, 100, 0, true);
  auto b = make_input(DType::bf16, 100, 1, true);
  std::vector<char> out(a.size());
  kernels::reduce2(out.data(), a.data(), b.data(), 100, DType::bf16, ReduceOp::sum);
  kernels::reduce_into(a.data(), b.data(), 100, DType::bf16, ReduceOp::sum);
  CHECK(std::memcmp(out.data(), a.data(), a.size()) == 0);
  CHECK(element_value(out.data(), 3, DType::bf16) != 0.0);
}

TEST_CASE("copy with non-temporal stores copies exactly, at any alignment") {
  for (size_t bytes : {0, 1, 31, 33, 1000, 100000})
    for (size_t offset : {0, 1, 7, 32}) {
      auto src = make_input(DType::f32, bytes / 4 + 1, 3);
      std::vector<char> dst(bytes + 64, 0);
      kernels::copy(dst.data() + offset, src.data(), bytes, kernels::Store::streaming);
      CHECK(std::memcmp(dst.data() + offset, src.data(), bytes) == 0);
      CHECK(dst[offset + bytes] == 0);
    }
}

TEST_CASE("reduce rejects dtypes without a kernel, reduce_and_keep also a missing kept buffer") {
  std::vector<char> buf(8), kept(8);
  const void* src[1] = {buf.data()};
  CHECK_THROWS_AS(kernels::reduce(buf.data(), src, 8, DType::u8, ReduceOp::sum), ValueError);
  CHECK_THROWS_AS(
      kernels::reduce_and_keep(buf.data(), kept.data(), src, 8, DType::u8, ReduceOp::sum),
      ValueError);
  CHECK_THROWS_AS(kernels::reduce_and_keep(buf.data(), nullptr, src, 2, DType::f32, ReduceOp::sum),
                  ValueError);
}

TEST_CASE(
    "the usable last-level cache is sysfs's or, where the copy probe streamed faster, the probe's "
    "size") {
  const size_t llc = kernels::last_level_cache_bytes(),
               usable = kernels::usable_last_level_cache_bytes();
  CHECK((usable == llc || usable == std::min(llc, kernels::kCopyProbeBytes)));
  CHECK(kernels::usable_last_level_cache_bytes() == usable);  // measured once
}

}  // namespace seam::test
