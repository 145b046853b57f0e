// What rocemu-ns3 writes: the summary (text and JSON), the per-flow and
// slowdown CSVs and the time series (docs/ns3.md, "Outputs").
#ifndef ROCEMU_NS3_REPORT_H_
#define ROCEMU_NS3_REPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "ns3/scenario.h"

namespace rocemu::ns3sim {

std::string FormatSummary(const ScenarioConfig& c, const ScenarioResult& r);
nlohmann::json SummaryJson(const ScenarioConfig& c, const ScenarioResult& r);
absl::Status WriteSeriesCsv(const std::string& path, const ScenarioConfig& c,
                            const ScenarioResult& r);
// Creates `dir` if needed and writes summary.txt, summary.json, flows.csv,
// slowdown_by_size.csv, slowdown_by_percentile.csv (`bins` groups) and,
// with samples, series.csv. The first error, after trying every file.
absl::Status WriteOutputs(const std::string& dir, const ScenarioConfig& c,
                          const ScenarioResult& r, uint32_t bins);

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_REPORT_H_
