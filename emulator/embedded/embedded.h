// The embedded mode: a whole rocemud (EAL, ports, RNICs, verbs session
// servers) inside an application's process, for the lowest latency. The
// application's library reaches it exactly as it reaches a daemon (the
// session socket and shared-memory rings), so every line of the engines,
// the port I/O and the session server is the daemon's own. What changes is
// who runs the loop: a thread that polls on its own CQs runs passes itself
// (Pump), so a message crosses no hand-over between tasks, the shape of a
// raw DPDK ping-pong; a progress thread runs the loop whenever the
// application has not pumped for a while (it waits in a blocking call, spins
// on memory, or computes), so ACKs, timers and control requests never
// depend on the application calling in.
#ifndef ROCEMU_EMULATOR_EMBEDDED_EMBEDDED_H_
#define ROCEMU_EMULATOR_EMBEDDED_EMBEDDED_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "emulator/daemon.h"

namespace rocemu::emulator {

class Embedded {
 public:
  // The progress thread stays away this long after the application's last
  // pump: a poller that pumps owns the loop, and one that stops (a blocking
  // wait, a computation) gets the thread back within this time.
  static constexpr nic::TimeNs kPumpGraceNs = 200'000;
  // An idle progress thread looks every idle_sleep_us, up to this many
  // times less often.
  static constexpr uint32_t kMaxIdleBackoff = 16;

  // Who runs the loop ($ROCEMU_EMBEDDED_PROGRESS).
  enum class Progress {
    // app (default): the application's polls. The progress thread sleeps
    // while they run passes, so they have the cores to themselves, and
    // runs the loop only when they stop for kPumpGraceNs.
    kApp,
    // thread: the progress thread runs the loop as rocemud does (a yield
    // after a pass without work, then a sleep on doorbells and RX
    // interrupts); the application's polls run passes too. For programs
    // that wait by spinning on memory (perftest's write_lat): nothing of
    // theirs calls the library while the frame that ends the wait
    // arrives, and a progress thread woken after kPumpGraceNs gets a core
    // such a spinner holds only when the scheduler's slice ends
    // (milliseconds).
    kThread,
  };

  // Starts the RNIC `config` describes; returns once its EAL, ports and
  // session sockets are up (or with why not). The progress thread is the
  // EAL's main lcore (pinned as eal.lcores says); application threads
  // that pump are registered as lcores on their first pump.
  static absl::StatusOr<std::unique_ptr<Embedded>> Start(
      config::Config config, Progress progress = Progress::kApp);
  ~Embedded();  // stops the thread and the daemon

  // One pass of the loop unless another thread is running one. Returns
  // whether anything moved, or nullopt if another thread held the loop.
  std::optional<bool> Pump();
  // Whether the calling thread is a progress thread. While the EAL starts
  // on it, it loads every PMD plugin, and Debian's mlx4/mlx5 PMDs load
  // libibverbs.so.1: with the drop-in on LD_LIBRARY_PATH, that is ours,
  // whose start-up would ask for an RNIC again from this very thread.
  static bool OnProgressThread();
  // The verbs sockets the session servers listen on, by port.
  const std::vector<std::string>& sockets() const { return sockets_; }

 private:
  Embedded(config::Config config, Progress progress);
  void RunProgress();
  // The time a pass runs at: `now` as read before the loop was taken, but
  // never before the previous pass's (another thread may have read the
  // clock later and run first), so the RNIC's clock never goes back.
  // Under running_.
  nic::TimeNs PassTime(nic::TimeNs now) {
    last_pass_ = std::max(last_pass_, now);
    return last_pass_;
  }

  Daemon daemon_;
  const Progress progress_;
  std::atomic<bool> stop_{false};
  std::vector<std::string> sockets_;
  std::thread thread_;
  // Held by the thread running a pass (acquire/release hand the daemon's
  // state over between threads).
  std::atomic_flag running_ = ATOMIC_FLAG_INIT;
  std::atomic<nic::TimeNs> last_pump_{0};
  nic::TimeNs last_pass_ = 0;  // PassTime
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_EMBEDDED_EMBEDDED_H_
