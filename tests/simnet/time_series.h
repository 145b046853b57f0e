// Periodic sampling of named probes (queue depths, bytes delivered per flow,
// pause state ...) on virtual time, kept in memory and written as CSV for
// plots.
#ifndef ROCEMU_TESTS_SIMNET_TIME_SERIES_H_
#define ROCEMU_TESTS_SIMNET_TIME_SERIES_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nic/clock.h"
#include "tests/simnet/network.h"

namespace rocemu::simnet {

class TimeSeries {
 public:
  // Columns must all be added before the first sample.
  void AddColumn(std::string name, std::function<double()> probe);
  // Samples every period_ns of virtual time from `first` on.
  void Attach(Network& net, nic::TimeNs period_ns, nic::TimeNs first = 0);
  void Sample(nic::TimeNs t);

  const std::vector<std::string>& columns() const { return names_; }
  size_t rows() const { return times_.size(); }
  nic::TimeNs time(size_t row) const { return times_[row]; }
  double value(size_t row, size_t column) const {
    return values_[row * names_.size() + column];
  }
  // Header "time_ns,<names>", then one line per sample.
  absl::Status WriteCsv(const std::string& path) const;

 private:
  std::vector<std::string> names_;
  std::vector<std::function<double()>> probes_;
  std::vector<nic::TimeNs> times_;
  std::vector<double> values_;  // row-major
};

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_TIME_SERIES_H_
