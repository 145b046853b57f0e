// What the library does when its daemon dies under the program (a crash,
// SIGKILL, a restart): the RNIC and the work it held are gone, so, as a
// device's driver completes what a fatal error stranded, every work
// request the daemon had not completed gets an IBV_WC_WR_FLUSH_ERR
// completion on its CQ, in posting order per queue, after the completions
// the daemon had already put in the ring. Armed CQs that got some fire
// their channel once, so a program blocked in ibv_get_cq_event wakes,
// polls them, and its next poll or event wait fails with EIO.
//
// What is outstanding comes from the rings: a queue's `retired` index
// (kept by the daemon up to the last request whose completion reached the
// CQ ring; a send completion retires every request before it) to what the
// library posted. Send requests' wr_ids are kept by the library
// (rocemu_qp::sq_wr_ids); receive requests are still in their ring slots.
// A shared receive queue's requests belong to no QP until one takes them
// and are not flushed (a device flushes an SRQ's requests only when it is
// destroyed). The embedded mode has no daemon to lose.
#ifndef ROCEMU_VERBS_CLIENT_CLIENT_FLUSH_H_
#define ROCEMU_VERBS_CLIENT_CLIENT_FLUSH_H_

#include "verbs/client/client_objects.h"

namespace rocemu::verbs::client {

// Marks the context dead and flushes its outstanding work requests, once.
// Takes ctx->mu, then each queue's lock (never a CQ's: a poller holding
// its CQ's lock may call this).
void MarkDead(rocemu_context* ctx);
// The same with ctx->mu held.
void MarkDeadLocked(rocemu_context* ctx);

}  // namespace rocemu::verbs::client

#endif  // ROCEMU_VERBS_CLIENT_CLIENT_FLUSH_H_
