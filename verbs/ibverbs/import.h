// Importing objects between contexts (ibv_import_device, ibv_import_pd,
// ibv_import_mr, ibv_import_dm): a second ibv_context over the same rocemud
// session, and second handles on that session's objects.
//
// With a kernel device, cmd_fd is the uverbs file: importing it gives a
// context over the same kernel ucontext, and a handle names a kernel object
// of it. Here cmd_fd is the session socket and the objects are the daemon's
// objects of that session, so an imported context shares the session
// (rocemu_context) with the one it came from: whichever closes last closes
// it. Only a session of this process can be imported: another process's
// socket carries its own requests and rings (EOPNOTSUPP, see docs/verbs.md).
//
// The registry keeps what an import needs to know of each live object
// (keyed by session and handle); every wrapper owns its own client record,
// so freeing one leaves the others' pointers valid, and a handle whose
// object was destroyed through any of them is no longer importable (the
// daemon refuses what a stale wrapper asks afterwards).
#ifndef ROCEMU_VERBS_IBVERBS_IMPORT_H_
#define ROCEMU_VERBS_IBVERBS_IMPORT_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "verbs/ibverbs/dropin.h"

namespace rocemu::ibverbs {

// A context opened on `rc` of `dev` (ibv_open_device): importable through
// rc->fd.
void RegisterSession(rocemu_context* rc, DevImpl* dev);
// The session of this process whose socket `cmd_fd` is (fstat: the same
// socket inode), with one more context on it, and its device; nullptr if
// none.
rocemu_context* AcquireSession(int cmd_fd, DevImpl** dev);
// One context of rc closed; true when it was the last (close the session).
bool ReleaseSession(rocemu_context* rc);

void RegisterPd(const PdImpl* p);
bool PdExists(rocemu_context* rc, uint32_t handle);
void ForgetPd(rocemu_context* rc, uint32_t handle);

// What an MR import copies: the registration as the daemon holds it.
struct MrFacts {
  uint32_t pd_handle;
  void* addr;
  size_t length;
  uint32_t lkey;
  uint32_t rkey;
  int access;
  std::shared_ptr<DmShared> dm;  // a DM MR's allocation
};
// Records (or updates, after a re-registration) m's registration.
void RegisterMr(const MrImpl* m);
std::optional<MrFacts> FindMr(rocemu_context* rc, uint32_t handle);
void ForgetMr(rocemu_context* rc, uint32_t handle);

void RegisterDm(rocemu_context* rc, uint32_t handle,
                std::shared_ptr<DmShared> dm);
std::shared_ptr<DmShared> FindDm(rocemu_context* rc, uint32_t handle);
void ForgetDm(rocemu_context* rc, uint32_t handle);

}  // namespace rocemu::ibverbs

#endif  // ROCEMU_VERBS_IBVERBS_IMPORT_H_
