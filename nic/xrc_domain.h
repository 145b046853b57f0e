// XRC domains (IBTA vol. 1 annex A14, ibv_open_xrcd). An XRC domain only
// groups objects, as a PD does: an XRC SRQ and an XRC TGT QP name the
// domain they belong to, and a request that reaches a TGT QP may be
// delivered only to an XRC SRQ of the TGT QP's domain. Unlike a PD, a
// domain is meant to be shared by processes (the daemon keys it by the
// file the processes open it with): it is created by the daemon on behalf
// of its first opener and counts its openers itself.
#ifndef ROCEMU_NIC_XRC_DOMAIN_H_
#define ROCEMU_NIC_XRC_DOMAIN_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/handle_table.h"
#include "nic/handles.h"

namespace rocemu::nic {

using XrcdHandle = uint32_t;

class XrcdTable {
 public:
  explicit XrcdTable(uint32_t max_xrcds) : xrcds_("XRCD", max_xrcds) {}

  absl::StatusOr<XrcdHandle> Alloc(ClientId client);
  // FailedPrecondition (EBUSY) while XRC SRQs or TGT QPs use it, NotFound
  // for an unknown handle or another client's domain.
  absl::Status Dealloc(ClientId client, XrcdHandle xrcd);

  bool Valid(XrcdHandle xrcd) const { return xrcds_.Get(xrcd) != nullptr; }
  bool OwnedBy(XrcdHandle xrcd, ClientId client) const {
    return xrcds_.Get(xrcd, client) != nullptr;
  }
  // XRC SRQs and TGT QPs take a reference so that the domain cannot be
  // freed under them.
  absl::Status Retain(XrcdHandle xrcd);
  void Release(XrcdHandle xrcd);
  uint32_t UseCount(XrcdHandle xrcd) const;
  uint32_t size() const { return xrcds_.size(); }

 private:
  struct Xrcd {
    uint32_t use_count = 0;
  };
  HandleTable<Xrcd> xrcds_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_XRC_DOMAIN_H_
