#include "runtime/boundary/policy.h"

#include "seam/errors.h"

namespace seam::boundary {

std::string_view policy_name(ReductionPolicy policy) {
  switch (policy) {
    case ReductionPolicy::AR: return "ar";
    case ReductionPolicy::RS: return "rs";
    case ReductionPolicy::RSV: return "rsv";
    case ReductionPolicy::RS_RSV: return "rs+rsv";
    case ReductionPolicy::AUTO: return "auto";
  }
  return "?";
}

std::optional<ReductionPolicy> parse_policy(std::string_view name) {
  for (auto p : {ReductionPolicy::AR, ReductionPolicy::RS, ReductionPolicy::RSV, ReductionPolicy::RS_RSV,
                 ReductionPolicy::AUTO})
    if (policy_name(p) == name) return p;
  return std::nullopt;
}

void require_resolved(ReductionPolicy policy) {
  if (policy == ReductionPolicy::AUTO)
    throw ValueError("boundary_reduction must be resolved before model construction");
}

bool policy_allows_reduce_scatter(ReductionPolicy policy) {
  require_resolved(policy);
  return policy == ReductionPolicy::RS || policy == ReductionPolicy::RS_RSV;
}

bool policy_allows_reduce_scatterv(ReductionPolicy policy) {
  require_resolved(policy);
  return policy == ReductionPolicy::RSV || policy == ReductionPolicy::RS_RSV;
}

PolicyRegistry PolicyRegistry::with_defaults() {
  PolicyRegistry r;
  for (const char* arch : {"BailingMoELinearForCausalLM", "BailingMoeV2_5ForCausalLM", "LongcatFlashForCausalLM",
                           "LongcatFlashForCausalLMNextN", "Step3VLForConditionalGeneration"})
    r.register_architecture(arch, ReductionPolicy::RSV);
  for (const char* arch : {"KimiK3ForConditionalGeneration", "KimiK3LinearForCausalLM", "Qwen3ForCausalLM",
                           "Qwen3ForSequenceClassification", "Qwen3Model", "Qwen3ForRewardModel",
                           "MossVLForCausalLM", "MossVLForConditionalGeneration",
                           "Qwen4ExpForConditionalGeneration", "Qwen4ExpForCausalLMMTP"})
    r.register_architecture(arch, ReductionPolicy::AR);
  // MiniCPM-V 4.5 shares its architecture name with the other MiniCPM-V versions; the reference
  // tells it apart by model_type and the config's version.
  r.register_model_version("minicpmv", "4.5", ReductionPolicy::AR);
  for (const char* type : {"qwen3", "qwen3_vl_text"}) r.register_model_type(type, ReductionPolicy::AR);
  return r;
}

void PolicyRegistry::register_architecture(std::string architecture, ReductionPolicy policy) {
  require_resolved(policy);
  by_architecture_[std::move(architecture)] = policy;
}

void PolicyRegistry::register_model_type(std::string model_type, ReductionPolicy policy) {
  require_resolved(policy);
  by_model_type_[std::move(model_type)] = policy;
}

std::optional<std::vector<int>> parse_model_version(std::string_view text) {
  std::vector<int> parts;
  while (true) {
    const size_t dot = text.find('.');
    const std::string_view part = text.substr(0, dot);
    if (part.empty() || part.size() > 6) return std::nullopt;
    int value = 0;
    for (char c : part) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    parts.push_back(value);
    if (dot == std::string_view::npos) return parts;
    text.remove_prefix(dot + 1);
  }
}

void PolicyRegistry::register_model_version(std::string model_type, std::string_view version, ReductionPolicy policy) {
  require_resolved(policy);
  auto parsed = parse_model_version(version);
  if (!parsed) throw ValueError("model version '" + std::string(version) + "' is not dot-separated integers");
  for (auto& rule : by_model_version_)
    if (rule.model_type == model_type && rule.version == *parsed) {
      rule.policy = policy;
      return;
    }
  by_model_version_.push_back({std::move(model_type), std::move(*parsed), policy});
}

std::optional<ReductionPolicy> PolicyRegistry::lookup(const ModelFacts& model) const {
  for (const auto& arch : model.architectures)
    if (auto it = by_architecture_.find(arch); it != by_architecture_.end()) return it->second;
  if (!model.version.empty())
    if (const auto version = parse_model_version(model.version))
      for (const auto& rule : by_model_version_)
        if (rule.model_type == model.model_type && rule.version == *version) return rule.policy;
  if (auto it = by_model_type_.find(model.model_type); it != by_model_type_.end()) return it->second;
  for (const auto& text : model.nested)
    if (auto found = lookup(text)) return found;
  return std::nullopt;
}

ReductionPolicy PolicyRegistry::resolve(ReductionPolicy requested, const ModelFacts& model) const {
  if (requested != ReductionPolicy::AUTO) return requested;
  if (model.dummy) return ReductionPolicy::RS_RSV;
  return lookup(model).value_or(fallback_);
}

}  // namespace seam::boundary
