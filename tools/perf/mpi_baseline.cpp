#include "tools/perf/mpi_baseline.h"

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace seam::perf {
namespace {

template <float (*Load)(uint16_t), uint16_t (*Store)(float), int Op>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  auto a = static_cast<const uint16_t*>(in);
  auto b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = Load(a[i]), y = Load(b[i]);
    float r = Op == 0 ? x + y : Op == 1 ? (x > y ? x : y) : (x < y ? x : y);
    b[i] = Store(r);
  }
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
constexpr MPI_User_function* kHalfOps[3] = {half_op<Load, Store, 0>, half_op<Load, Store, 1>,
                                            half_op<Load, Store, 2>};

}  // namespace

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

MpiBaseline::MpiBaseline(int* argc, char*** argv) {
  if (!launched_by_mpirun()) return;
  MPI_Init(argc, argv);
  active_ = true;
}

MpiBaseline::~MpiBaseline() {
  if (!active_) return;
  for (auto& ops : half_ops_)
    for (auto& op : ops)
      if (op != MPI_Op{}) MPI_Op_free(&op);
  MPI_Finalize();
}

MpiArgs MpiBaseline::args(DType dtype, ReduceOp op) {
  const int o = static_cast<int>(op);
  const MPI_Op kBuiltin[3] = {MPI_SUM, MPI_MAX, MPI_MIN};
  switch (dtype) {
    case DType::f32: return {MPI_FLOAT, kBuiltin[o]};
    case DType::f64: return {MPI_DOUBLE, kBuiltin[o]};
    case DType::i32: return {MPI_INT32_T, kBuiltin[o]};
    case DType::bf16:
    case DType::f16: {
      const int h = dtype == DType::bf16 ? 0 : 1;
      if (half_ops_[h][o] == MPI_Op{}) {
        MPI_User_function* fn = h == 0 ? kHalfOps<bf16_to_float, float_to_bf16>[o]
                                       : kHalfOps<f16_to_float, float_to_f16>[o];
        MPI_Op_create(fn, 1, &half_ops_[h][o]);
      }
      return {MPI_UINT16_T, half_ops_[h][o]};
    }
    default: throw std::invalid_argument("no MPI baseline for dtype " + std::string(dtype_name(dtype)));
  }
}

}  // namespace seam::perf
