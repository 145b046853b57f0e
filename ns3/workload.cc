#include "ns3/workload.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ns3/units.h"

namespace rocemu::ns3sim {

namespace {

std::vector<absl::string_view> Words(absl::string_view line) {
  if (size_t hash = line.find('#'); hash != absl::string_view::npos) {
    line = line.substr(0, hash);
  }
  return absl::StrSplit(line, absl::ByAnyChar(" \t\r,"), absl::SkipEmpty());
}

}  // namespace

absl::StatusOr<SizeCdf> SizeCdf::Parse(absl::string_view text) {
  SizeCdf c;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    std::vector<absl::string_view> w = Words(line);
    if (w.empty()) continue;
    double bytes = 0, pct = 0;
    if (w.size() != 2 || !absl::SimpleAtod(w[0], &bytes) ||
        !absl::SimpleAtod(w[1], &pct)) {
      return absl::InvalidArgumentError(
          absl::StrCat("CDF line ", line_no, ": expected 'bytes percent'"));
    }
    if (bytes < 0 || pct < 0 || pct > 100 ||
        (!c.points_.empty() && (bytes < c.points_.back().first ||
                                pct / 100 < c.points_.back().second))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CDF line ", line_no, ": sizes and percentages must not decrease"));
    }
    c.points_.emplace_back(bytes, pct / 100);
  }
  if (c.points_.size() < 2 || c.points_.back().second != 1.0) {
    return absl::InvalidArgumentError("CDF: two points or more, ending at 100");
  }
  if (c.points_.back().first < 1) {
    return absl::InvalidArgumentError("CDF: every size is 0");
  }
  return c;
}

double SizeCdf::MeanBytes() const {
  // A point mass at the first point, then uniform between points.
  double mean = points_[0].first * points_[0].second;
  for (size_t i = 1; i < points_.size(); ++i) {
    mean += (points_[i].second - points_[i - 1].second) *
            (points_[i].first + points_[i - 1].first) / 2;
  }
  return mean;
}

uint64_t SizeCdf::Quantile(double u) const {
  if (u <= points_[0].second) return std::llround(points_[0].first);
  for (size_t i = 1; i < points_.size(); ++i) {
    if (u > points_[i].second) continue;
    const auto [x0, p0] = points_[i - 1];
    const auto [x1, p1] = points_[i];
    const double x = p1 == p0 ? x1 : x0 + (x1 - x0) * (u - p0) / (p1 - p0);
    return std::max<uint64_t>(1, std::llround(x));
  }
  return std::llround(points_.back().first);
}

std::vector<FlowSpec> GeneratePoisson(const SizeCdf& cdf,
                                      const PoissonWorkload& w,
                                      const std::vector<uint64_t>& host_rate) {
  std::vector<FlowSpec> flows;
  const uint32_t hosts = static_cast<uint32_t>(host_rate.size());
  if (hosts < 2 || w.load <= 0) return flows;
  std::mt19937_64 rng(w.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double mean_bits = cdf.MeanBytes() * 8;
  for (uint32_t src = 0; src < hosts; ++src) {
    // Flows per ns that offer load x rate on average.
    const double per_ns =
        w.load * static_cast<double>(host_rate[src]) / 1e9 / mean_bits;
    std::exponential_distribution<double> gap(per_ns);
    double t = gap(rng);
    while (t < static_cast<double>(w.duration_ns)) {
      FlowSpec f;
      f.src = src;
      f.dst = static_cast<uint32_t>(rng() % (hosts - 1));
      if (f.dst >= src) ++f.dst;
      f.bytes = cdf.Quantile(unit(rng));
      f.start_ns = w.start_ns + static_cast<nic::TimeNs>(t);
      f.op = w.op;
      flows.push_back(f);
      t += gap(rng);
    }
  }
  std::stable_sort(flows.begin(), flows.end(),
                   [](const FlowSpec& a, const FlowSpec& b) {
                     return a.start_ns < b.start_ns;
                   });
  return flows;
}

absl::StatusOr<std::vector<FlowSpec>> ParseFlowList(absl::string_view text,
                                                    uint32_t hosts) {
  std::vector<FlowSpec> flows;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    std::vector<absl::string_view> w = Words(line);
    if (w.empty()) continue;
    auto err = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("flow list line ", line_no, ": ", what));
    };
    if (w.size() < 4 || w.size() > 6) {
      return err("expected 'src dst bytes start [op] [stop]'");
    }
    FlowSpec f;
    if (!absl::SimpleAtoi(w[0], &f.src) || !absl::SimpleAtoi(w[1], &f.dst) ||
        f.src >= hosts || f.dst >= hosts || f.src == f.dst) {
      return err(absl::StrCat("hosts must be distinct and below ", hosts));
    }
    absl::StatusOr<uint64_t> bytes = ParseBytes(w[2]);
    if (!bytes.ok()) return err(bytes.status().message());
    f.bytes = *bytes;
    absl::StatusOr<uint64_t> start = ParseTimeNs(w[3]);
    if (!start.ok()) return err(start.status().message());
    f.start_ns = *start;
    if (w.size() > 4) {
      std::optional<FlowOp> op = FlowOpFromName(w[4]);
      if (!op.has_value()) return err("op is write, send, read or ud_send");
      f.op = *op;
    }
    if (w.size() > 5) {
      absl::StatusOr<uint64_t> stop = ParseTimeNs(w[5]);
      if (!stop.ok()) return err(stop.status().message());
      if (*stop <= f.start_ns) return err("stop must be after start");
      f.stop_ns = *stop;
    }
    flows.push_back(f);
  }
  return flows;
}

}  // namespace rocemu::ns3sim
