// The application library's side of the embedded mode: with
// $ROCEMU_EMBEDDED naming a rocemud configuration, the library starts that
// RNIC inside this process when it is loaded (librocemu_embedded.so,
// loaded with dlopen; $ROCEMU_EMBEDDED_MODULE overrides where from) and
// discovery finds its sockets instead of a daemon's. Polls that find nothing
// then run the RNIC's loop themselves (EmbeddedPump) instead of yielding.
#ifndef ROCEMU_VERBS_CLIENT_CLIENT_EMBEDDED_H_
#define ROCEMU_VERBS_CLIENT_CLIENT_EMBEDDED_H_

#include <sched.h>

#include <atomic>
#include <string>
#include <vector>

#include "verbs/client/embedded_module.h"

namespace rocemu::verbs::client {

// The in-process RNIC's verbs sockets (started by the first call); empty
// when $ROCEMU_EMBEDDED is unset, or when the RNIC failed to start (said
// once on stderr: the program then finds no device, as with no daemon).
const std::vector<std::string>& EmbeddedSockets();

// Set once the in-process RNIC runs.
extern std::atomic<rocemu_embedded_pump_fn> g_embedded_pump;

// One pass of the in-process RNIC's loop on this thread; false when not
// embedded. When another thread holds the loop (the progress thread,
// perhaps asleep until a frame's interrupt and waiting for this core),
// this thread yields instead.
inline bool EmbeddedPump() {
  const rocemu_embedded_pump_fn pump =
      g_embedded_pump.load(std::memory_order_acquire);
  if (pump == nullptr) return false;
  if (pump() < 0) sched_yield();
  return true;
}

}  // namespace rocemu::verbs::client

#endif  // ROCEMU_VERBS_CLIENT_CLIENT_EMBEDDED_H_
