// What a producer leaves for the next boundary (§1.10): its output value, the update that joins it
// to the residual, and the work it still owes — a declared sum (every output of this producer owes
// it to its input edge), a carried sum (an exit chose to leave it for this batch), or a handoff
// (producer-specific unfinished work such as a deferred MoE finalize). The completion steps are
// bound by the boundary at construction and referenced here, so the stream knows nothing of groups.
#pragma once

#include <cstdint>

#include "layouts/layout.h"
#include "seam/tensor.h"
#include "runtime/residual/function_ref.h"

namespace seam::residual {

struct ForwardBatch;
class StageUpdate;

/// Completes this rank's partial sum: all-reduces it over its group (in place or into storage the
/// step owns) and, for a redistributing sum, moves it to this rank's rows. Returns the complete value.
using CompleteSum = FunctionRef<Tensor(const Tensor& partial, ForwardBatch& batch)>;

/// A sum every output of a producer owes its declared input edge.
struct DeclaredSum {
  SumGroup group;
  CompleteSum complete;  ///< the group's unfused all-reduce
};

/// Producer-specific unfinished work (the guide's HandoffOutput, e.g. a deferred MoE finalize).
struct HandoffOutput {
  FunctionRef<Tensor(ForwardBatch& batch)> complete;  ///< the producer's unfused tail
  const void* state = nullptr;  ///< the producer's data a fused consumer (a handoff norm) reads
  int64_t rows = 0;             ///< token rows of the completed output
};

/// What compute (through its exit) hands the stream: a complete tensor, an unreduced partial with
/// its carried completion (the internal UnreducedOutput), or a handoff.
struct ProducerOutput {
  enum class Kind : uint8_t { complete, unreduced, handoff };
  Kind kind = Kind::complete;
  Tensor value;                 ///< complete value or this rank's partial; empty for a handoff
  SumGroup group{};             ///< unreduced: the group its sum runs over
  bool redistributes = false;   ///< unreduced: completion also moves rows (never offered to fused kernels)
  CompleteSum complete_sum;     ///< unreduced: the carried completion
  HandoffOutput handoff;

  static ProducerOutput complete_tensor(const Tensor& value) {
    ProducerOutput out;
    out.value = value;
    return out;
  }
  static ProducerOutput unreduced(const Tensor& partial, SumGroup group, CompleteSum complete, bool redistributes = false) {
    ProducerOutput out;
    out.kind = Kind::unreduced;
    out.value = partial;
    out.group = group;
    out.redistributes = redistributes;
    out.complete_sum = complete;
    return out;
  }
  static ProducerOutput from_handoff(const HandoffOutput& handoff) {
    ProducerOutput out;
    out.kind = Kind::handoff;
    out.handoff = handoff;
    return out;
  }
};

/// Which work a contribution still owes.
enum class Owed : uint8_t { none, declared_sum, carried_sum, handoff };

/// A producer's contribution as the stream holds it.
struct Contribution {
  Tensor value;                         ///< partial or complete value (empty while a handoff is owed)
  const StageUpdate* update = nullptr;  ///< the producer's actual update
  Owed owed = Owed::none;
  SumGroup group{};                     ///< declared or carried sum: its group
  bool redistributes = false;           ///< carried sum: completion also moves rows
  CompleteSum complete_sum;             ///< declared or carried sum: its completion
  HandoffOutput handoff;                ///< owed handoff

  /// Is the owed work a sum (declared or carried)?
  bool owes_sum() const { return owed == Owed::declared_sum || owed == Owed::carried_sum; }
};

}  // namespace seam::residual
