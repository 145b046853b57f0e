// Where a fuzz target binds its session socket: in TMPDIR when
// run_fuzzer.sh points it at its scratch directory. A campaign stopped on a
// plateau ends with libFuzzer's _Exit, past the targets' atexit handlers,
// and the directory takes the socket with it.
#ifndef ROCEMU_TESTS_FUZZ_SCRATCH_SOCKET_H_
#define ROCEMU_TESTS_FUZZ_SCRATCH_SOCKET_H_

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace rocemu::fuzz {

inline std::string ScratchSocketPath(const char* name) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string dir = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  if (dir.size() > 64) dir = "/tmp";  // sun_path holds 108 bytes
  return dir + "/" + name + "-" + std::to_string(getpid()) + ".sock";
}

}  // namespace rocemu::fuzz

#endif  // ROCEMU_TESTS_FUZZ_SCRATCH_SOCKET_H_
