// The congestion state a queue pair carries: its DCQCN reaction point and
// pacer (as a sender) and its notification-point history (as a receiver).
// Sized at construction; the data path only updates it.
#ifndef ROCEMU_NIC_CONGESTION_QP_H_
#define ROCEMU_NIC_CONGESTION_QP_H_

#include <cstdint>

#include "pfc_ecn/dcqcn_params.h"
#include "pfc_ecn/notification_point.h"
#include "pfc_ecn/pacer.h"
#include "pfc_ecn/reaction_point.h"

namespace rocemu::nic {

// Parameters of a QP that has not been through INIT->RTR yet (it sends and
// receives nothing, but the objects must point somewhere).
const pfc_ecn::DcqcnParams& DefaultDcqcnParams();

struct QpCongestion {
  QpCongestion() : rp(&DefaultDcqcnParams()), pacer(0) {}

  // The reaction point drives the pacer only once it has seen a CNP: before
  // that the QP sends at whatever the link allows.
  pfc_ecn::ReactionPoint rp;
  pfc_ecn::Pacer pacer;
  // As a receiver: one flow (this QP) of the device's notification point;
  // its history lives here so that a QP carries 16 bytes for it, not a
  // NotificationPoint of its own.
  pfc_ecn::NpFlowState np;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_CONGESTION_QP_H_
