// Conversions between the wire protocol's fixed layouts and the RNIC's
// types, and small helpers the session server's files share.
#ifndef ROCEMU_VERBS_SERVER_SESSION_CONVERT_H_
#define ROCEMU_VERBS_SERVER_SESSION_CONVERT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "nic/qp_attr.h"
#include "verbs/wire/wire_protocol.h"

namespace rocemu::verbs {

// The errno value a failed Status becomes in a reply.
int ErrnoOf(const absl::Status& s);
size_t PageSize();
bool QpTypeFromWire(uint8_t t, nic::QpType* out);
nic::QpCap CapFromWire(const wire::WireQpCap& c);
wire::WireQpCap CapToWire(const nic::QpCap& c);
void PathFromWire(const wire::WireAhAttr& w, nic::QpPath* p);
void PathToWire(const nic::QpPath& p, wire::WireAhAttr* w);
absl::Status QpAttrFromWire(const wire::WireQpAttr& w, uint32_t mask,
                            nic::QpAttr* a);
void QpAttrToWire(const nic::QpAttr& a, wire::WireQpAttr* w);
// True for an eventfd (the only kind of fd a client may hand for wake-ups).
bool IsEventFd(int fd);

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_SERVER_SESSION_CONVERT_H_
