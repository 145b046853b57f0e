#include "tests/simnet/time_series.h"

#include <cstdio>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rocemu::simnet {

void TimeSeries::AddColumn(std::string name, std::function<double()> probe) {
  names_.push_back(std::move(name));
  probes_.push_back(std::move(probe));
}

void TimeSeries::Attach(Network& net, nic::TimeNs period_ns,
                        nic::TimeNs first) {
  net.AddSampler(
      period_ns, [this](nic::TimeNs t) { Sample(t); }, first);
}

void TimeSeries::Sample(nic::TimeNs t) {
  times_.push_back(t);
  for (auto& probe : probes_) values_.push_back(probe());
}

absl::Status TimeSeries::WriteCsv(const std::string& path) const {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "w"),
                                          &std::fclose);
  if (!f) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  std::string line = "time_ns";
  for (const std::string& n : names_) absl::StrAppend(&line, ",", n);
  std::fprintf(f.get(), "%s\n", line.c_str());
  for (size_t r = 0; r < times_.size(); ++r) {
    line = absl::StrCat(times_[r]);
    for (size_t c = 0; c < names_.size(); ++c) {
      absl::StrAppend(&line, ",", value(r, c));
    }
    std::fprintf(f.get(), "%s\n", line.c_str());
  }
  if (std::ferror(f.get())) return absl::DataLossError("write failed");
  return absl::OkStatus();
}

}  // namespace rocemu::simnet
