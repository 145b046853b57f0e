// Protection domains. A PD only groups objects: MRs, AHs, SRQs and QPs name
// the PD they were created in, and a memory access is allowed only when the
// QP's PD is the MR's PD. Each PD belongs to one client; the daemon refuses a
// client any object of another client's PD.
#ifndef ROCEMU_NIC_PD_TABLE_H_
#define ROCEMU_NIC_PD_TABLE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/handle_table.h"
#include "nic/handles.h"

namespace rocemu::nic {

class PdTable {
 public:
  explicit PdTable(uint32_t max_pd) : pds_("PD", max_pd) {}

  // ibv_alloc_pd.
  absl::StatusOr<PdHandle> Alloc(ClientId client);
  // ibv_dealloc_pd: FailedPrecondition (EBUSY) while objects still use it,
  // NotFound for an unknown handle or another client's PD.
  absl::Status Dealloc(ClientId client, PdHandle pd);

  bool Valid(PdHandle pd) const { return pds_.Get(pd) != nullptr; }
  // The PD exists and belongs to `client`.
  bool OwnedBy(PdHandle pd, ClientId client) const {
    return pds_.Get(pd, client) != nullptr;
  }
  // Objects created in the PD take a reference so that it cannot be freed
  // under them (QPs: the engine calls Retain/Release itself).
  absl::Status Retain(PdHandle pd);
  void Release(PdHandle pd);
  uint32_t UseCount(PdHandle pd) const;
  uint32_t size() const { return pds_.size(); }

 private:
  struct Pd {
    uint32_t use_count = 0;
  };
  HandleTable<Pd> pds_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_PD_TABLE_H_
