// Registration as the C API and the drop-in share it.
#ifndef ROCEMU_VERBS_CLIENT_CLIENT_MEMORY_H_
#define ROCEMU_VERBS_CLIENT_CLIENT_MEMORY_H_

#include <cstddef>
#include <cstdint>

#include "verbs/rocemu_verbs.h"

namespace rocemu::verbs::client {

// rocemu_reg_mr_iova; `device_memory`: the range is a DM allocation's
// library buffer (ibv_reg_dm_mr), which pins nothing (the daemon leaves
// it out of the process's RLIMIT_MEMLOCK count).
rocemu_mr* RegMr(rocemu_pd* pd, void* addr, size_t length, uint64_t iova,
                 int access, bool device_memory);

}  // namespace rocemu::verbs::client

#endif  // ROCEMU_VERBS_CLIENT_CLIENT_MEMORY_H_
