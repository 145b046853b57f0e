#include "nic/pd_table.h"

#include <memory>

#include "absl/strings/str_format.h"

namespace rocemu::nic {

absl::StatusOr<PdHandle> PdTable::Alloc(ClientId client) {
  return pds_.Insert(client, std::make_unique<Pd>());
}

absl::Status PdTable::Dealloc(ClientId client, PdHandle pd) {
  Pd* p = pds_.Get(pd, client);
  if (p == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no PD 0x%08x", pd));
  }
  if (p->use_count != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "PD 0x%08x still used by %u objects", pd, p->use_count));
  }
  return pds_.Erase(pd);
}

absl::Status PdTable::Retain(PdHandle pd) {
  Pd* p = pds_.Get(pd);
  if (p == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no PD 0x%08x", pd));
  }
  ++p->use_count;
  return absl::OkStatus();
}

void PdTable::Release(PdHandle pd) {
  if (Pd* p = pds_.Get(pd); p != nullptr && p->use_count > 0) --p->use_count;
}

uint32_t PdTable::UseCount(PdHandle pd) const {
  const Pd* p = pds_.Get(pd);
  return p == nullptr ? 0 : p->use_count;
}

}  // namespace rocemu::nic
