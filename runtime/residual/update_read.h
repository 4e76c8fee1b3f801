// The residual update and read protocols (§5.1). The producer owns its StageUpdate (how its output
// joins the residual); the consumer owns its StageRead and norm (how its input is read from the
// residual). Capability flags are plain data so a bound path checks them with a load; the
// operations are virtual. Instances are per model (ADD and the norm reads are shared constants)
// or per layer (MHC, whose read and update share coefficient state).
#pragma once

#include <cstdint>

#include <string>

#include "seam/layer_output.h"
#include "seam/tensor.h"
#include "runtime/residual/norm.h"

namespace seam::residual {

/// What a read returns: the compute input and the residual the stream keeps.
struct ReadResult {
  StageInput input;
  Tensor residual;
};

/// The quantised input format a consumer asks its read for.
enum class QuantFormat : uint8_t {
  none,
  fp8_per_token,  ///< FP8 E4M3 with a per-token scale
};
/// "" or "fp8_per_token", as the reference spells quant_format.
const char* quant_format_name(QuantFormat format);

/// Per-call read options: a quantised input and an addition that joins the residual sum
/// (e.g. a deepstack embedding) before the norm.
struct ReadOptions {
  QuantFormat quant = QuantFormat::none;
  const Tensor* post_residual_addition = nullptr;
};

/// How a producer's output joins the residual.
class StageUpdate {
 public:
  struct Capabilities {
    bool adds_plainly = false;             ///< a plain add: may join a partial before its sum, may fuse with the norm
    bool at_producer = false;              ///< the producer writes the residual at its own exit
    bool can_defer_across_layers = false;  ///< state and parameters outlive the producing layer
  };
  explicit StageUpdate(Capabilities capabilities) : capabilities_(capabilities) {}
  virtual ~StageUpdate() = default;

  bool adds_plainly() const { return capabilities_.adds_plainly; }
  bool at_producer() const { return capabilities_.at_producer; }
  bool can_defer_across_layers() const { return capabilities_.can_defer_across_layers; }
  /// Short name for errors ("ADD", "MHC attention", ...).
  virtual const char* name() const = 0;

  /// The updated residual from the complete output h and the residual; may reuse either's storage.
  virtual Tensor update(const Tensor& h, const Tensor& residual) const = 0;

  /// Called before a boundary gathers this update's residual back from attention-TP slices: state
  /// that travels with the residual's rows must be gatherable too. NotSupportedError where not.
  virtual void require_residual_gather() const {}

 private:
  Capabilities capabilities_;
};

/// How a consumer reads its input from the residual.
class StageRead {
 public:
  struct Capabilities {
    bool norms_plainly = false;  ///< input = norm (+quant) of the residual, residual unchanged: fused kernels allowed
    bool before_gather = false;  ///< must read on the source rows before a DP gather
  };
  explicit StageRead(Capabilities capabilities) : capabilities_(capabilities) {}
  virtual ~StageRead() = default;

  bool norms_plainly() const { return capabilities_.norms_plainly; }
  bool before_gather() const { return capabilities_.before_gather; }

  /// The initial residual from the layer stack's input h.
  virtual Tensor enter(const Tensor& h) const { return h; }
  /// Reads a written residual.
  virtual ReadResult read(const Tensor& residual, RmsNorm& norm, const ReadOptions& options) const = 0;
  /// Applies the producer's update of the complete output h and reads; `residual` is null at the
  /// stack's start (h is then the input). A plain add may fuse with the norm.
  virtual ReadResult update_and_read(const StageUpdate& update, const Tensor& h, const Tensor* residual,
                                     RmsNorm& norm, const ReadOptions& options) const = 0;

 private:
  Capabilities capabilities_;
};

/// One layer's residual operations (the reference's LayerResidual).
struct LayerResidual {
  const StageRead* attention_read;
  const StageUpdate* attention_update;
  const StageRead* ffn_read;
  const StageUpdate* ffn_update;
};

}  // namespace seam::residual
