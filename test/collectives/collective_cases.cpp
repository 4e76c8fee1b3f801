#include "test/collectives/collective_cases.h"

#include <cstring>

#include "test/collectives/reference.h"
#include "layouts/element_values.h"
#include "test/collectives/collective_names.h"

namespace seam::test {
namespace {

constexpr DType kDtypes[] = {DType::f32, DType::f64, DType::i32, DType::bf16, DType::f16};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min};
// 9000 elements pass the 16 KiB from which shared host memory goes zero-copy, for every dtype.
constexpr size_t kCounts[] = {0, 1, 7, 1000, 9000};
constexpr size_t kLarge = size_t{1} << 20;  // 4 MiB of f32 per rank

bool reduces(Kind k) {
  return k == Kind::all_reduce || k == Kind::reduce_scatter || k == Kind::reduce_scatterv;
}
bool has_root(Kind k) { return k == Kind::broadcast || k == Kind::scatterv; }
bool has_blocks(Kind k) {
  return k == Kind::reduce_scatterv || k == Kind::all_gatherv || k == Kind::scatterv;
}

std::vector<size_t> offsets_of(const std::vector<size_t>& blocks) {
  std::vector<size_t> off(blocks.size() + 1, 0);
  for (size_t r = 0; r < blocks.size(); ++r) off[r + 1] = off[r] + blocks[r];
  return off;
}

}  // namespace

std::string describe(const Case& c) {
  return std::string(kind_name(c.kind)) + " ranks=" + std::to_string(c.ranks) +
         " count=" + std::to_string(c.count) + " dtype=" + std::string(dtype_name(c.dtype)) +
         (reduces(c.kind) ? " op=" + std::string(reduce_op_name(c.op)) : "") +
         (c.in_place ? " in-place" : " out-of-place") +
         (has_root(c.kind) ? " root=" + std::to_string(c.root) : "") +
         (c.fractional ? " fractional" : "") + (c.skewed ? " skewed" : "");
}

std::vector<size_t> case_blocks(const Case& c) {
  std::vector<size_t> blocks(c.ranks, c.count);
  if (has_blocks(c.kind))
    for (int r = 0; r < c.ranks; ++r)
      blocks[r] = c.skewed ? (r + 1) * c.count : r % 3 == 1 ? 0 : c.count + r;
  return blocks;
}

RankCase::RankCase(const Case& c, int rank, SharedBuffers shared) : c_(c) {
  const size_t es = dtype_size(c.dtype);
  const int n = c.ranks;
  auto reduced = [&](size_t j) {
    double acc = input_value(c.dtype, 0, j, c.fractional);
    for (int p = 1; p < n; ++p)
      acc = apply_reduce_op(c.op, acc, input_value(c.dtype, p, j, c.fractional));
    return acc;
  };
  switch (c.kind) {
    case Kind::all_reduce:
      input_ = make_input(c.dtype, c.count, rank, c.fractional);
      output_ = c.in_place ? input_ : std::vector<char>(c.count * es);
      send_ = c.in_place ? output_.data() : input_.data();
      recv_ = output_.data();
      for (size_t i = 0; i < c.count; ++i) expected_.push_back(reduced(i));
      break;
    case Kind::reduce_scatter:
    case Kind::reduce_scatterv: {
      blocks_ = case_blocks(c);
      offsets_ = offsets_of(blocks_);
      input_ = make_input(c.dtype, offsets_.back(), rank);
      output_ = c.in_place ? input_ : std::vector<char>(blocks_[rank] * es);
      send_ = c.in_place ? output_.data() : input_.data();
      recv_ = output_.data() + (c.in_place ? offsets_[rank] * es : 0);
      for (size_t i = 0; i < blocks_[rank]; ++i) expected_.push_back(reduced(offsets_[rank] + i));
      break;
    }
    case Kind::all_gather:
    case Kind::all_gatherv: {
      blocks_ = case_blocks(c);
      offsets_ = offsets_of(blocks_);
      input_ = make_input(c.dtype, blocks_[rank], rank);
      output_.assign(offsets_.back() * es, 0);
      if (c.in_place && !input_.empty())
        std::memcpy(output_.data() + offsets_[rank] * es, input_.data(), input_.size());
      send_ = c.in_place ? output_.data() + offsets_[rank] * es : input_.data();
      recv_ = output_.data();
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < blocks_[p]; ++i) expected_.push_back(input_value(c.dtype, p, i));
      break;
    }
    case Kind::broadcast:
      output_ = rank == c.root ? make_input(c.dtype, c.count, rank) : std::vector<char>(c.count * es);
      recv_ = output_.data();
      for (size_t i = 0; i < c.count; ++i) expected_.push_back(input_value(c.dtype, c.root, i));
      break;
    case Kind::scatterv: {
      blocks_ = case_blocks(c);
      offsets_ = offsets_of(blocks_);
      if (rank == c.root) input_ = make_input(c.dtype, offsets_.back(), rank);
      const bool root_in_place = c.in_place && rank == c.root;
      output_ = root_in_place ? input_ : std::vector<char>(blocks_[rank] * es);
      send_ = root_in_place ? output_.data() : input_.data();
      recv_ = output_.data() + (root_in_place ? offsets_[rank] * es : 0);
      for (size_t i = 0; i < blocks_[rank]; ++i)
        expected_.push_back(input_value(c.dtype, c.root, offsets_[rank] + i));
      break;
    }
  }
  if (shared != SharedBuffers::none) move_to_shared_memory(shared);
}

void RankCase::move_to_shared_memory(SharedBuffers shared) {
  // In place, the input is the output, and moves with it.
  const bool input_moves = shared == SharedBuffers::both;
  shared_ = SharedHostMemory::allocate(input_.size() + output_.size() + 64);
  char* input = static_cast<char*>(shared_->data());
  char* output = input + input_.size() + 64;  // apart, so an overrun shows
  if (input_moves && !input_.empty()) std::memcpy(input, input_.data(), input_.size());
  if (!output_.empty()) std::memcpy(output, output_.data(), output_.size());
  auto moved = [&](const void* p) -> char* {
    const char* at = static_cast<const char*>(p);
    if (at >= output_.data() && at <= output_.data() + output_.size())
      return output + (at - output_.data());
    if (input_moves && at >= input_.data() && at <= input_.data() + input_.size())
      return input + (at - input_.data());
    return const_cast<char*>(at);
  };
  send_ = moved(send_);
  recv_ = moved(recv_);
}

long RankCase::first_wrong() const {
  // FP32 accumulation, rounded once (direct, shared memory) or once per ring hop.
  double tolerance = c_.fractional ? c_.ranks / 128.0 : 0.0;
  return first_mismatch(recv_, expected_, c_.dtype, tolerance);
}

void for_each_case(Kind kind, int ranks, bool large, const std::function<void(const Case&)>& visit) {
  const bool reduction = reduces(kind);
  for (DType dtype : kDtypes)
    for (ReduceOp op : kOps) {
      if (!reduction && op != ReduceOp::sum) continue;
      for (size_t count : kCounts)
        for (bool in_place : {false, true}) {
          if (kind == Kind::broadcast && in_place) continue;  // always in place
          for (int root = 0; root < (has_root(kind) ? ranks : 1); ++root)
            visit({kind, ranks, count, dtype, op, in_place, root});
        }
    }
  if (large)
    for (DType dtype : {DType::f32, DType::bf16})
      for (bool in_place : {false, true})
        if (!(kind == Kind::broadcast && in_place))
          visit({kind, ranks, kLarge, dtype, ReduceOp::sum, in_place, ranks - 1});
  // Blocks that differ in size with none empty (a split of an uneven two-rank gather): large,
  // their bytes no whole number of pages, and under a page, where the split reads a block whole.
  if (has_blocks(kind))
    for (size_t count : {size_t{400}, large ? kLarge / ranks + 1 : 0})
      for (bool in_place : {false, true})
        if (count) visit({kind, ranks, count, DType::f32, ReduceOp::sum, in_place, 0, false, true});
  if (kind == Kind::all_reduce)
    for (DType dtype : {DType::bf16, DType::f16})
      visit({kind, ranks, 3001, dtype, ReduceOp::sum, false, 0, true});
}

}  // namespace seam::test
