#include "nic/multicast_groups.h"

#include <algorithm>

#include "protocol/multicast.h"

namespace rocemu::nic {

absl::Status MulticastGroups::Attach(const Gid& mgid, uint32_t qpn) {
  if (!protocol::IsMulticastIp(mgid)) {
    return absl::InvalidArgumentError("attach_mcast: not a multicast GID");
  }
  auto it = groups_.find(mgid);
  if (it == groups_.end()) {
    if (groups_.size() >= max_groups_) {
      return absl::ResourceExhaustedError(
          "attach_mcast: max_mcast_grp groups exist");
    }
  } else if (std::find(it->second.begin(), it->second.end(), qpn) !=
             it->second.end()) {
    return absl::OkStatus();
  } else if (it->second.size() >= max_qp_attach_) {
    return absl::ResourceExhaustedError(
        "attach_mcast: max_mcast_qp_attach QPs in this group");
  }
  if (total_ >= max_total_attach_) {
    return absl::ResourceExhaustedError(
        "attach_mcast: max_total_mcast_qp_attach reached");
  }
  auto [g, created] = groups_.try_emplace(mgid);
  g->second.push_back(qpn);
  if (created) ++generation_;
  ++total_;
  return absl::OkStatus();
}

absl::Status MulticastGroups::Detach(const Gid& mgid, uint32_t qpn) {
  auto it = groups_.find(mgid);
  if (it == groups_.end()) {
    return absl::InvalidArgumentError("detach_mcast: no such group");
  }
  auto& qps = it->second;
  auto q = std::find(qps.begin(), qps.end(), qpn);
  if (q == qps.end()) {
    return absl::InvalidArgumentError(
        "detach_mcast: QP not attached to the group");
  }
  qps.erase(q);
  --total_;
  if (qps.empty()) {
    groups_.erase(it);
    ++generation_;
  }
  return absl::OkStatus();
}

void MulticastGroups::DetachAll(uint32_t qpn) {
  for (auto it = groups_.begin(); it != groups_.end();) {
    auto& qps = it->second;
    const size_t before = qps.size();
    qps.erase(std::remove(qps.begin(), qps.end(), qpn), qps.end());
    total_ -= before - qps.size();
    if (qps.empty()) {
      groups_.erase(it++);
      ++generation_;
    } else {
      ++it;
    }
  }
}

}  // namespace rocemu::nic
