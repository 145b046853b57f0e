#include "ns3/units.h"

#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rocemu::ns3sim {

namespace {

struct Suffix {
  absl::string_view name;
  double factor;
};

// The number in front of the first suffix that `text` ends with (longest
// suffixes first), scaled.
template <size_t N>
absl::StatusOr<uint64_t> Parse(absl::string_view text, const Suffix (&s)[N],
                               absl::string_view what) {
  for (const Suffix& suf : s) {
    if (text.size() <= suf.name.size() ||
        text.substr(text.size() - suf.name.size()) != suf.name) {
      continue;
    }
    double v = 0;
    if (!absl::SimpleAtod(text.substr(0, text.size() - suf.name.size()), &v) ||
        !(v >= 0) || !std::isfinite(v)) {
      break;
    }
    const double scaled = v * suf.factor;
    if (scaled >= 1.8e19) break;
    return static_cast<uint64_t>(std::llround(scaled));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("bad ", what, " '", text, "'"));
}

}  // namespace

absl::StatusOr<uint64_t> ParseRateBps(absl::string_view text) {
  static constexpr Suffix kRates[] = {
      {"Gbps", 1e9}, {"Mbps", 1e6}, {"Kbps", 1e3}, {"bps", 1},
      {"G", 1e9},    {"M", 1e6},    {"K", 1e3},    {"", 1}};
  return Parse(text, kRates, "rate");
}

absl::StatusOr<uint64_t> ParseTimeNs(absl::string_view text) {
  if (text == "0") return 0;  // the one time that needs no unit
  static constexpr Suffix kTimes[] = {
      {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  return Parse(text, kTimes, "time (with ns, us, ms or s)");
}

absl::StatusOr<uint64_t> ParseBytes(absl::string_view text) {
  static constexpr Suffix kBytes[] = {{"KiB", 1024.0},
                                      {"MiB", 1048576.0},
                                      {"GiB", 1073741824.0},
                                      {"Ki", 1024.0},
                                      {"Mi", 1048576.0},
                                      {"Gi", 1073741824.0},
                                      {"KB", 1e3},
                                      {"MB", 1e6},
                                      {"GB", 1e9},
                                      {"K", 1e3},
                                      {"M", 1e6},
                                      {"G", 1e9},
                                      {"B", 1},
                                      {"", 1}};
  return Parse(text, kBytes, "byte count");
}

}  // namespace rocemu::ns3sim
