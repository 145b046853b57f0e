// librocemu_embedded.so: the C face of emulator/embedded/embedded.h for the
// application library's dlopen (verbs/client/embedded_module.h).
#include "verbs/client/embedded_module.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/strings/str_join.h"
#include "config/config.h"
#include "emulator/embedded/embedded.h"

namespace {

// Never destroyed by static destruction: an exit handler stops it first,
// while the rest of the process still exists.
rocemu::emulator::Embedded* g_embedded = nullptr;

void StopAtExit() {
  delete g_embedded;
  g_embedded = nullptr;
}

void Copy(const std::string& s, char* out, size_t len) {
  if (out != nullptr && len > 0) std::snprintf(out, len, "%s", s.c_str());
}

}  // namespace

extern "C" {

int rocemu_embedded_start(const char* config_path, char* sockets,
                          size_t sockets_len, char* error, size_t error_len) {
  using rocemu::emulator::Embedded;
  if (Embedded::OnProgressThread()) return -2;  // see OnProgressThread
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (g_embedded == nullptr) {
    absl::StatusOr<rocemu::config::Config> config =
        rocemu::config::LoadConfigFile(config_path);
    if (!config.ok()) {
      Copy(std::string(config.status().message()), error, error_len);
      return -1;
    }
    // $ROCEMU_EMBEDDED_PROGRESS: see Embedded::Progress.
    const char* p = std::getenv("ROCEMU_EMBEDDED_PROGRESS");
    Embedded::Progress progress = Embedded::Progress::kApp;
    if (p != nullptr && *p != '\0') {
      if (std::string_view(p) == "thread") {
        progress = Embedded::Progress::kThread;
      } else if (std::string_view(p) != "app") {
        Copy(std::string("$ROCEMU_EMBEDDED_PROGRESS: \"") + p +
                 "\" is neither app nor thread",
             error, error_len);
        return -1;
      }
    }
    absl::StatusOr<std::unique_ptr<Embedded>> e =
        Embedded::Start(std::move(*config), progress);
    if (!e.ok()) {
      Copy(std::string(e.status().message()), error, error_len);
      return -1;
    }
    g_embedded = e->release();
    std::atexit(StopAtExit);
  }
  Copy(absl::StrJoin(g_embedded->sockets(), "\n"), sockets, sockets_len);
  return 0;
}

int rocemu_embedded_pump(void) {
  if (g_embedded == nullptr) return -1;
  const std::optional<bool> moved = g_embedded->Pump();
  return moved.has_value() ? (*moved ? 1 : 0) : -1;
}

}  // extern "C"
