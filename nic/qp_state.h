// The modify-QP transition rules of IBTA vol. 1 11.2.5 as ibv_modify_qp
// applies them: which transitions exist, and per transition and QP type which
// attributes must and may be given.
#ifndef ROCEMU_NIC_QP_STATE_H_
#define ROCEMU_NIC_QP_STATE_H_

#include "absl/status/status.h"
#include "nic/qp_attr.h"

namespace rocemu::nic {

struct QpTransitionMasks {
  bool valid = false;
  QpAttrMask required = 0;
  QpAttrMask optional = 0;
};

// Masks for cur -> next on a QP of `type` (kState itself excluded).
QpTransitionMasks GetQpTransitionMasks(QpType type, QpState cur, QpState next);

// Checks a modify request against the table: the transition exists, every
// required attribute is present, nothing outside required|optional|kState is
// set, and kCurState (if set) names the current state. Value ranges are
// checked by the QP itself.
absl::Status CheckQpTransition(QpType type, QpState cur, QpState next,
                               QpAttrMask mask, QpState claimed_cur);

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_QP_STATE_H_
