// Protection domains. A PD only groups objects: MRs, AHs, SRQs and QPs name
// the PD they were created in, and a memory access is allowed only when the
// QP's PD is the MR's PD. Each PD belongs to one client; the daemon refuses a
// client any object of another client's PD.
#ifndef ROCEMU_NIC_PD_TABLE_H_
#define ROCEMU_NIC_PD_TABLE_H_

#include <cstdint>

#include "nic/use_counted_table.h"

namespace rocemu::nic {

// ibv_alloc_pd / ibv_dealloc_pd. Objects created in the PD take a reference
// (QPs: the engine calls Retain/Release itself).
class PdTable : public UseCountedTable {
 public:
  explicit PdTable(uint32_t max_pd) : UseCountedTable("PD", max_pd) {}
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_PD_TABLE_H_
