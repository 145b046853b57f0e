// Objects that only group others and must outlive them: protection domains
// and XRC domains. Each belongs to one client; the objects created in one
// take a reference, and the domain cannot be freed while any is held
// (ibv_dealloc_pd and ibv_close_xrcd fail with EBUSY).
#ifndef ROCEMU_NIC_USE_COUNTED_TABLE_H_
#define ROCEMU_NIC_USE_COUNTED_TABLE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/handle_table.h"
#include "nic/handles.h"

namespace rocemu::nic {

class UseCountedTable {
 public:
  // `what` names the object in error messages ("PD", "XRCD").
  UseCountedTable(const char* what, uint32_t max_objects)
      : objects_(what, max_objects) {}

  absl::StatusOr<uint32_t> Alloc(ClientId client);
  // FailedPrecondition (EBUSY) while objects still use it, NotFound for an
  // unknown handle or another client's object.
  absl::Status Dealloc(ClientId client, uint32_t handle);

  bool Valid(uint32_t handle) const { return objects_.Get(handle) != nullptr; }
  // It exists and belongs to `client`.
  bool OwnedBy(uint32_t handle, ClientId client) const {
    return objects_.Get(handle, client) != nullptr;
  }
  absl::Status Retain(uint32_t handle);
  void Release(uint32_t handle);
  uint32_t UseCount(uint32_t handle) const;
  uint32_t size() const { return objects_.size(); }

 private:
  struct Object {
    uint32_t use_count = 0;
  };
  HandleTable<Object> objects_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_USE_COUNTED_TABLE_H_
