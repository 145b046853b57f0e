// The Unix socket paths rocemud listens on (the control socket, each port's
// verbs socket) are claimed the same way before binding, so that a second
// daemon started with the same paths says so instead of stealing them.
#ifndef ROCEMU_EMULATOR_CONTROL_SOCKET_PATH_H_
#define ROCEMU_EMULATOR_CONTROL_SOCKET_PATH_H_

#include <string>

#include "absl/status/status.h"

namespace rocemu::emulator {

// Readies `path` for bind(): its directory exists (created 0755), nothing
// but a socket sits there (AlreadyExists: a file is never removed), and no
// live daemon answers a connect of socket type `type` there (AlreadyExists);
// a stale socket of a daemon that died is removed. InvalidArgument for a
// path too long for sockaddr_un.
absl::Status ClaimSocketPath(const std::string& path, int type);

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_CONTROL_SOCKET_PATH_H_
