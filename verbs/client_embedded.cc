#include "verbs/client_embedded.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_split.h"

#ifndef ROCEMU_EMBEDDED_MODULE_PATH
#define ROCEMU_EMBEDDED_MODULE_PATH "librocemu_embedded.so"
#endif

namespace rocemu::verbs::client {

std::atomic<rocemu_embedded_pump_fn> g_embedded_pump{nullptr};

namespace {

std::vector<std::string> Start(const char* config) {
  const char* module = std::getenv("ROCEMU_EMBEDDED_MODULE");
  if (module == nullptr || *module == '\0') {
    module = ROCEMU_EMBEDDED_MODULE_PATH;
  }
  // RTLD_LOCAL: the daemon's code inside stays the module's own.
  void* handle = dlopen(module, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "rocemu: $ROCEMU_EMBEDDED: %s\n", dlerror());
    return {};
  }
  auto start = reinterpret_cast<rocemu_embedded_start_fn>(
      dlsym(handle, "rocemu_embedded_start"));
  auto pump = reinterpret_cast<rocemu_embedded_pump_fn>(
      dlsym(handle, "rocemu_embedded_pump"));
  if (start == nullptr || pump == nullptr) {
    std::fprintf(stderr, "rocemu: $ROCEMU_EMBEDDED: %s is not the module\n",
                 module);
    return {};
  }
  char sockets[4096] = "";
  char error[512] = "";
  if (const int rc =
          start(config, sockets, sizeof(sockets), error, sizeof(error));
      rc != 0) {
    // -2: this library was loaded by the RNIC's own start-up (a PMD that
    // links libibverbs); the program's copy of the library has the RNIC.
    if (rc != -2) {
      std::fprintf(stderr, "rocemu: $ROCEMU_EMBEDDED=%s: %s\n", config, error);
    }
    return {};
  }
  g_embedded_pump.store(pump, std::memory_order_release);
  return absl::StrSplit(sockets, '\n', absl::SkipEmpty());
}

}  // namespace

const std::vector<std::string>& EmbeddedSockets() {
  // Once per process: the module's EAL can start only once.
  static const std::vector<std::string>* sockets = [] {
    const char* config = std::getenv("ROCEMU_EMBEDDED");
    return new std::vector<std::string>(config != nullptr && *config != '\0'
                                            ? Start(config)
                                            : std::vector<std::string>{});
  }();
  return *sockets;
}

// The RNIC is there when the program starts, as a NIC would be: a peer
// started after this program finds its link up (a memif client can only
// join a server that is already running).
__attribute__((constructor)) void StartWithTheProgram() {
  if (std::getenv("ROCEMU_EMBEDDED") != nullptr) EmbeddedSockets();
}

}  // namespace rocemu::verbs::client
