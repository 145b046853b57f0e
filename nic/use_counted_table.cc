#include "nic/use_counted_table.h"

#include <memory>

#include "absl/strings/str_format.h"

namespace rocemu::nic {

absl::StatusOr<uint32_t> UseCountedTable::Alloc(ClientId client) {
  return objects_.Insert(client, std::make_unique<Object>());
}

absl::Status UseCountedTable::Dealloc(ClientId client, uint32_t handle) {
  Object* o = objects_.Get(handle, client);
  if (o == nullptr) {
    return absl::NotFoundError(
        absl::StrFormat("no %s 0x%08x", objects_.what(), handle));
  }
  if (o->use_count != 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s 0x%08x still used by %u objects", objects_.what(),
                        handle, o->use_count));
  }
  return objects_.Erase(handle);
}

absl::Status UseCountedTable::Retain(uint32_t handle) {
  Object* o = objects_.Get(handle);
  if (o == nullptr) {
    return absl::NotFoundError(
        absl::StrFormat("no %s 0x%08x", objects_.what(), handle));
  }
  ++o->use_count;
  return absl::OkStatus();
}

void UseCountedTable::Release(uint32_t handle) {
  if (Object* o = objects_.Get(handle); o != nullptr && o->use_count > 0) {
    --o->use_count;
  }
}

uint32_t UseCountedTable::UseCount(uint32_t handle) const {
  const Object* o = objects_.Get(handle);
  return o == nullptr ? 0 : o->use_count;
}

}  // namespace rocemu::nic
