#include "verbs/client/client_embedded.h"

#include <dlfcn.h>
#include <pthread.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

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

// The start runs on a thread of its own and the first caller that needs
// the sockets waits for it. The library may be loaded by dlopen (UCX loads
// its InfiniBand module so, Python extensions are): its constructor then
// runs under the dynamic loader's lock, which the EAL's start on the
// progress thread needs for loading its drivers; a constructor waiting
// for that start would wait for ever.
struct Launch {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::vector<std::string> sockets;
};

// Made on first use (the constructor may run before this file's static
// initialisers) and never freed (exit handlers use it).
Launch*& LaunchSlot() {
  static Launch* launch = new Launch;
  return launch;
}

Launch& TheLaunch() { return *LaunchSlot(); }

// A child forked while the start ran has no thread finishing it, and its
// copy of the mutex may be held: it gets a finished launch of its own,
// with no RNIC (the parent's is the parent's).
void ForkedMidStart() {
  Launch*& slot = LaunchSlot();
  if (slot->done) return;
  slot = new Launch;
  slot->done = true;
}

// Waits for the start (a no-op once done).
Launch& Started() {
  Launch& l = TheLaunch();
  std::unique_lock<std::mutex> lock(l.mu);
  l.cv.wait(lock, [&l] { return l.done; });
  return l;
}

void LaunchOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* config = std::getenv("ROCEMU_EMBEDDED");
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    // The RNIC's own start-up loads this library when one of the EAL's
    // drivers links libibverbs (a program on librocemu_verbs, whose RNIC
    // is started by that library's copy of this code): no second RNIC.
    if (config == nullptr || *config == '\0' ||
        std::strcmp(name, ROCEMU_EMBEDDED_PROGRESS_THREAD) == 0) {
      Launch& l = TheLaunch();
      std::lock_guard<std::mutex> lock(l.mu);
      l.done = true;
      return;
    }
    // A program that exits before its first verbs call must not unload
    // the EAL's libraries under a start still running.
    std::atexit([] { Started(); });
    pthread_atfork(nullptr, nullptr, ForkedMidStart);
    std::thread([path = std::string(config)] {
      std::vector<std::string> sockets = Start(path.c_str());
      Launch& l = TheLaunch();
      std::lock_guard<std::mutex> lock(l.mu);
      l.sockets = std::move(sockets);
      l.done = true;
      l.cv.notify_all();
    }).detach();
  });
}

}  // namespace

const std::vector<std::string>& EmbeddedSockets() {
  LaunchOnce();
  return Started().sockets;
}

// The RNIC is there when the program starts, as a NIC would be: a peer
// started after this program finds its link up.
__attribute__((constructor)) void StartWithTheProgram() { LaunchOnce(); }

}  // namespace rocemu::verbs::client
