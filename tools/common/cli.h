// Strict command-line parsing shared by seam_plan, seam_decoder_sim and boundary_perf: a number is
// the whole argument, in range, or a ValueError whose message names the flag (the tools exit 2).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seam::cli {

/// This rank's index among its host's ranks, as the launcher tells it (OMPI_COMM_WORLD_LOCAL_RANK,
/// or SEAM_LOCAL_RANK for processes started by hand); 0 where neither says.
int launcher_local_rank();

/// The whole of `text` as a base-10 integer in [min, max] (no sign for min >= 0, no spaces, no
/// suffix or exponent). Throws ValueError naming `flag` otherwise.
int64_t parse_int(std::string_view flag, std::string_view text, int64_t min, int64_t max);

/// A byte count: parse_int() digits with an optional K, M or G suffix (KiB, MiB, GiB; either case),
/// at most `max` bytes. Throws ValueError naming `flag` otherwise.
uint64_t parse_bytes(std::string_view flag, std::string_view text, uint64_t max);

/// A comma-separated list of parse_int() values, none empty.
std::vector<int64_t> parse_int_list(std::string_view flag, std::string_view text, int64_t min, int64_t max);

/// Walks argv one flag at a time; value() takes the current flag's argument or throws naming it.
/// -h and --help print the tool's usage and exit 0.
class ArgReader {
 public:
  ArgReader(int argc, char** argv, void (*usage)()) : argc_(argc), argv_(argv), usage_(usage) {}
  /// Advances to the next flag; false at the end.
  bool next();
  /// Refuses the current flag: throws ValueError("unknown flag ...").
  [[noreturn]] void reject() const;
  /// The current flag.
  const std::string& flag() const { return flag_; }
  /// The current flag's value (the next argument).
  std::string value();
  /// The current flag's value as parse_int(flag, value, min, max).
  int64_t number(int64_t min, int64_t max) { return parse_int(flag_, value(), min, max); }
  /// number() narrowed to int; [min, max] must lie within int.
  int int_number(int min, int max) { return static_cast<int>(number(min, max)); }

 private:
  int argc_;
  char** argv_;
  void (*usage_)();
  int i_ = 0;
  std::string flag_;
};

/// Runs a tool's body: any exception prints "<tool>: <what>" and exits 2, nothing escapes.
int run_tool(const char* tool, int (*body)(int, char**), int argc, char** argv);

}  // namespace seam::cli
