// The guide's error messages for residual-stream misuse, verbatim (§4.7).
#pragma once

namespace seam::residual::messages {

inline constexpr const char* kUnconsumedContribution = "cannot replace an unconsumed producer contribution";
inline constexpr const char* kDeclaredSumCompletion = "a declared sum cannot carry another completion";
inline constexpr const char* kOwedWithoutContribution = "an owed handle has no contribution in this stream";
inline constexpr const char* kWrittenMismatch = "written residual does not match the supplied output";
inline constexpr const char* kForeignOutput =
    "output does not belong to this residual stream; change layer outputs through boundary accessors";
inline constexpr const char* kSnapshotNotPlain = "snapshot requires a plain residual update";
inline constexpr const char* kHandoffCapture = "a finalize handoff requires main-output capture";
inline constexpr const char* kNotStarted = "start the layer stack before entering a stage";
inline constexpr const char* kTakeWithPending = "write the residual update before taking the final output";
inline constexpr const char* kInvalidFinalHandoff = "invalid final deferred MoE handoff";
inline constexpr const char* kFinalHandoffCapture = "final handoff capture requires an explicit capture adapter";
inline constexpr const char* kFoldNotPlain = "fold requires a plain residual update";
inline constexpr const char* kBranchNeedsPrepared = "a branch must start from a prepared stage input";
inline constexpr const char* kMergeNeedsPending = "branch merge requires a pending producer contribution";
inline constexpr const char* kOwedHasNoTensor = "an OwedOutput has no tensor; pass it to the next boundary call";

}  // namespace seam::residual::messages
