// Quantities in scenario files and flags: rates ("25G", "100Gbps",
// "400M"), times ("1us", "500ns", "2ms", "0.5s") and byte counts ("64K",
// "1M", "30MB", "64KiB"). Decimal prefixes are powers of 1000; "Ki", "Mi",
// "Gi" powers of 1024.
#ifndef ROCEMU_NS3_UNITS_H_
#define ROCEMU_NS3_UNITS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rocemu::ns3sim {

absl::StatusOr<uint64_t> ParseRateBps(absl::string_view text);
absl::StatusOr<uint64_t> ParseTimeNs(absl::string_view text);
absl::StatusOr<uint64_t> ParseBytes(absl::string_view text);

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_UNITS_H_
