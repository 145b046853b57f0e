#include "nic/address_handle.h"

#include <memory>

#include "absl/strings/str_format.h"

namespace rocemu::nic {

absl::StatusOr<AhHandle> AhTable::Create(ClientId client, PdHandle pd,
                                         const AhAttr& attr) {
  if (!pds_.OwnedBy(pd, client)) {
    return absl::NotFoundError(absl::StrFormat("no PD 0x%08x", pd));
  }
  if (!attr.is_global) {
    return absl::InvalidArgumentError("RoCE address handles must be global");
  }
  if (attr.port_num == 0 || attr.port_num > num_ports_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("port %u does not exist", attr.port_num));
  }
  if (attr.flow_label > 0xFFFFF) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flow label 0x%x exceeds 20 bits", attr.flow_label));
  }
  std::optional<Gid> sgid = gids_.Get(attr.sgid_index);
  if (!sgid) {
    return absl::InvalidArgumentError(
        absl::StrFormat("no GID at index %u", attr.sgid_index));
  }
  if (GidIsIpv4Mapped(*sgid) != GidIsIpv4Mapped(attr.dgid)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "source GID %s and destination GID %s are of different IP versions",
        GidToString(*sgid), GidToString(attr.dgid)));
  }
  auto ah = std::make_unique<AddressHandle>();
  ah->pd = pd;
  ah->attr = attr;
  ah->sgid = *sgid;
  absl::StatusOr<AhHandle> h = ahs_.Insert(client, std::move(ah));
  if (!h.ok()) return h.status();
  (void)pds_.Retain(pd);
  return *h;
}

absl::Status AhTable::Destroy(ClientId client, AhHandle ah) {
  const AddressHandle* a = ahs_.Get(ah, client);
  if (a == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no AH 0x%08x", ah));
  }
  const PdHandle pd = a->pd;
  absl::Status s = ahs_.Erase(ah);
  if (s.ok()) pds_.Release(pd);
  return s;
}

absl::Status AhTable::SetDmac(AhHandle ah, const protocol::MacAddr& mac) {
  AddressHandle* a = ahs_.Get(ah);
  if (a == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no AH 0x%08x", ah));
  }
  a->dmac = mac;
  a->dmac_resolved = true;
  a->headers_gid_generation = 0;
  return absl::OkStatus();
}

}  // namespace rocemu::nic
