// Session server: charging what clients create to the limits of their uid
// and process (resource_limits.h).
#include "verbs/server/session_objects.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs {

absl::Status SessionServer::Charge(Client& c, const ResourceUse& more) {
  if (options_.limits != nullptr) {
    absl::Status st = options_.limits->Take(c.cred.uid, more);
    if (!st.ok()) {
      ++counters_.limit_refusals;
      return st;
    }
  }
  c.use += more;
  return absl::OkStatus();
}

void SessionServer::Uncharge(Client& c, const ResourceUse& less) {
  if (options_.limits != nullptr) options_.limits->Give(c.cred.uid, less);
  c.use -= less;
}

absl::Status SessionServer::PinPages(Client& c, uint64_t pages) {
  if (options_.limits != nullptr) {
    absl::Status st = options_.limits->Pin(c.cred.pid, pages);
    if (!st.ok()) {
      ++counters_.memlock_refusals;
      return st;
    }
  }
  c.pinned_pages += pages;
  return absl::OkStatus();
}

void SessionServer::UnpinPages(Client& c, uint64_t pages) {
  if (options_.limits != nullptr) options_.limits->Unpin(c.cred.pid, pages);
  c.pinned_pages -= pages;
}

}  // namespace rocemu::verbs
