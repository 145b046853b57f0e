// The RNIC's multicast groups: which UD QPs are attached to which multicast
// GID (ibv_attach_mcast). A frame to BTH.DestQP 0xFFFFFF reaches every QP
// attached to its destination GID. Limits are the device's max_mcast_grp,
// max_mcast_qp_attach and max_total_mcast_qp_attach (ENOMEM past them, as
// rxe and mlx5 answer).
#ifndef ROCEMU_NIC_MULTICAST_GROUPS_H_
#define ROCEMU_NIC_MULTICAST_GROUPS_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "nic/gid_table.h"

namespace rocemu::nic {

class MulticastGroups {
 public:
  MulticastGroups(uint32_t max_groups, uint32_t max_qp_attach,
                  uint32_t max_total_attach)
      : max_groups_(max_groups),
        max_qp_attach_(max_qp_attach),
        max_total_attach_(max_total_attach) {}

  // Attaching a QP twice to one group is not an error (ConnectX, rxe).
  absl::Status Attach(const Gid& mgid, uint32_t qpn);
  // InvalidArgument (EINVAL, as rxe) when the QP is not attached to it.
  absl::Status Detach(const Gid& mgid, uint32_t qpn);
  // A destroyed QP leaves every group it was in.
  void DetachAll(uint32_t qpn);
  // The QPs attached to `mgid`, or nullptr when nobody is.
  const std::vector<uint32_t>* Members(const Gid& mgid) const {
    auto it = groups_.find(mgid);
    return it == groups_.end() ? nullptr : &it->second;
  }
  // f(const Gid&, const std::vector<uint32_t>& qpns) per group, in no
  // particular order (control path: the daemon's views).
  template <typename F>
  void ForEach(F&& f) const {
    for (const auto& [mgid, qpns] : groups_) f(mgid, qpns);
  }
  size_t group_count() const { return groups_.size(); }
  // Changes whenever a group appears or goes (not on a second member):
  // the daemon reports its groups to the link (IGMP/MLD) when it moves.
  uint64_t generation() const { return generation_; }
  size_t attach_count() const { return total_; }

 private:
  uint32_t max_groups_, max_qp_attach_, max_total_attach_;
  size_t total_ = 0;
  uint64_t generation_ = 0;
  absl::flat_hash_map<Gid, std::vector<uint32_t>> groups_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_MULTICAST_GROUPS_H_
