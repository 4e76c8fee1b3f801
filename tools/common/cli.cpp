#include "tools/common/cli.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "seam/errors.h"

namespace seam::cli {

int launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SEAM_LOCAL_RANK"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return 0;
}

namespace {
std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }
}  // namespace

int64_t parse_int(std::string_view flag, std::string_view text, int64_t min, int64_t max) {
  const std::string where = std::string(flag) + ": ";
  if (text.empty()) throw ValueError(where + "expected an integer, got an empty value");
  // from_chars takes no '+' or spaces; a '-' is refused up front where negatives cannot be valid.
  if (min >= 0 && text.front() == '-') throw ValueError(where + quoted(text) + " must not be negative");
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range)
    throw ValueError(where + quoted(text) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  if (ec != std::errc() || end != text.data() + text.size())
    throw ValueError(where + quoted(text) + " is not an integer");
  if (v < min || v > max)
    throw ValueError(where + quoted(text) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return v;
}

uint64_t parse_bytes(std::string_view flag, std::string_view text, uint64_t max) {
  uint64_t unit = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': case 'k': unit = uint64_t{1} << 10; break;
      case 'M': case 'm': unit = uint64_t{1} << 20; break;
      case 'G': case 'g': unit = uint64_t{1} << 30; break;
      default: break;
    }
    if (unit > 1) text.remove_suffix(1);
  }
  return static_cast<uint64_t>(parse_int(flag, text, 0, static_cast<int64_t>(max / unit))) * unit;
}

std::vector<int64_t> parse_int_list(std::string_view flag, std::string_view text, int64_t min, int64_t max) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) throw ValueError(std::string(flag) + ": empty entry in " + quoted(text));
    out.push_back(parse_int(flag, item, min, max));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

bool ArgReader::next() {
  if (++i_ >= argc_) return false;
  flag_ = argv_[i_];
  if (flag_ == "-h" || flag_ == "--help") {
    usage_();
    std::exit(0);
  }
  return true;
}

void ArgReader::reject() const { throw ValueError("unknown flag " + flag_); }

std::string ArgReader::value() {
  if (i_ + 1 >= argc_) throw ValueError("missing value for " + flag_);
  return argv_[++i_];
}

int run_tool(const char* tool, int (*body)(int, char**), int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: unknown error\n", tool);
  }
  return 2;
}

}  // namespace seam::cli
