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

#include "nic/use_counted_table.h"

namespace rocemu::nic {

using XrcdHandle = uint32_t;

// XRC SRQs and TGT QPs take a reference so that the domain cannot be freed
// under them.
class XrcdTable : public UseCountedTable {
 public:
  explicit XrcdTable(uint32_t max_xrcds) : UseCountedTable("XRCD", max_xrcds) {}
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_XRC_DOMAIN_H_
