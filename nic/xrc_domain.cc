#include "nic/xrc_domain.h"

#include <memory>

#include "absl/strings/str_format.h"

namespace rocemu::nic {

absl::StatusOr<XrcdHandle> XrcdTable::Alloc(ClientId client) {
  return xrcds_.Insert(client, std::make_unique<Xrcd>());
}

absl::Status XrcdTable::Dealloc(ClientId client, XrcdHandle xrcd) {
  Xrcd* x = xrcds_.Get(xrcd, client);
  if (x == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no XRCD 0x%08x", xrcd));
  }
  if (x->use_count != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "XRCD 0x%08x still used by %u objects", xrcd, x->use_count));
  }
  return xrcds_.Erase(xrcd);
}

absl::Status XrcdTable::Retain(XrcdHandle xrcd) {
  Xrcd* x = xrcds_.Get(xrcd);
  if (x == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no XRCD 0x%08x", xrcd));
  }
  ++x->use_count;
  return absl::OkStatus();
}

void XrcdTable::Release(XrcdHandle xrcd) {
  if (Xrcd* x = xrcds_.Get(xrcd); x != nullptr && x->use_count > 0) {
    --x->use_count;
  }
}

uint32_t XrcdTable::UseCount(XrcdHandle xrcd) const {
  const Xrcd* x = xrcds_.Get(xrcd);
  return x == nullptr ? 0 : x->use_count;
}

}  // namespace rocemu::nic
