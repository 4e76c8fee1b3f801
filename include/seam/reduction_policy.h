// The reduction policy (--boundary-reduction, §2.1): which optional FFN output transports a
// stack may use (all-reduce, reduce-scatter, RSv), and the resolution of `auto` from the model
// architecture before construction. Engines register their own architectures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace seam::boundary {

/// The optional FFN output transports a stack may use; AUTO resolves per architecture (PolicyRegistry).
enum class ReductionPolicy : uint8_t { AR, RS, RSV, RS_RSV, AUTO };

/// "ar", "rs", "rsv", "rs+rsv", "auto".
std::string_view policy_name(ReductionPolicy policy);
/// Parses a policy name; nullopt when unknown.
std::optional<ReductionPolicy> parse_policy(std::string_view name);
/// Optional permissions a resolved policy grants (AUTO throws: resolve it first): reduce-scatter,
/// and variable-size reduce-scatter (RSv).
bool policy_allows_reduce_scatter(ReductionPolicy policy);
bool policy_allows_reduce_scatterv(ReductionPolicy policy);
/// Throws ValueError("boundary_reduction must be resolved before model construction") for AUTO.
void require_resolved(ReductionPolicy policy);

/// A config `version` as dot-separated non-negative integers ("4.5" → {4, 5}), the way MiniCPM-V's
/// loader reads it; nullopt for anything else.
std::optional<std::vector<int>> parse_model_version(std::string_view text);

/// What `auto` reads of a checkpoint: its architecture names, model_type, the config's version, and
/// the nested text configs (text_config, llm_config, language_config ...), searched when the outer
/// one has no rule.
struct ModelFacts {
  std::vector<std::string> architectures = {};
  std::string model_type = {};
  /// The config's `version` as written ("4.5"); empty when it has none. MiniCPM-V keys its rule on it.
  std::string version = {};
  bool dummy = false;  ///< a dummy model path (load format "dummy")
  std::vector<ModelFacts> nested = {};
};

/// Architecture → policy rules for `auto`. with_defaults() holds the reference's table; an engine
/// adds its own with register_architecture / register_model_version / register_model_type before
/// construction. Lookup order: architecture, then (model_type, version), then model_type, then the
/// nested text configs.
class PolicyRegistry {
 public:
  /// The reference's table (§2.1); rs+rsv for anything it does not name.
  static PolicyRegistry with_defaults();
  /// A rule for an architecture name ("Qwen3ForCausalLM"), and one for a model_type.
  void register_architecture(std::string architecture, ReductionPolicy policy);
  void register_model_type(std::string model_type, ReductionPolicy policy);
  /// A rule for one version of a model_type: `version` matches numerically per dot-separated
  /// component ("4.5" matches "4.5" and "04.5", not "4.50" or "4"). Throws ValueError on a
  /// version that is not dot-separated integers.
  void register_model_version(std::string model_type, std::string_view version, ReductionPolicy policy);
  /// The concrete policy for `requested` (returned as is unless AUTO). A draft checkpoint resolves
  /// its own (speculative_boundary_reduction) by calling this with its own facts.
  ReductionPolicy resolve(ReductionPolicy requested, const ModelFacts& model) const;

 private:
  std::optional<ReductionPolicy> lookup(const ModelFacts& model) const;
  std::unordered_map<std::string, ReductionPolicy> by_architecture_;
  std::unordered_map<std::string, ReductionPolicy> by_model_type_;
  struct VersionRule {
    std::string model_type;
    std::vector<int> version;
    ReductionPolicy policy;
  };
  std::vector<VersionRule> by_model_version_;
  ReductionPolicy fallback_ = ReductionPolicy::RS_RSV;
};

}  // namespace seam::boundary
