#include "emulator/embedded/embedded.h"

#include <pthread.h>
#include <rte_lcore.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>

#include "absl/status/status.h"
#include "emulator/logging.h"
#include "verbs/client/embedded_module.h"

namespace rocemu::emulator {
namespace {

thread_local bool on_progress_thread = false;

// Without a free lcore id the thread still works, uncached.
bool RegisterThread() {
  return rte_lcore_id() != LCORE_ID_ANY || rte_thread_register() == 0;
}

}  // namespace

Embedded::Embedded(config::Config config, Progress progress)
    : daemon_(std::move(config)), progress_(progress) {
  daemon_.LeaveDpdkToProcessExit();
}

absl::StatusOr<std::unique_ptr<Embedded>> Embedded::Start(config::Config config,
                                                          Progress progress) {
  Logger& log = Logger::Get();
  log.set_level(config.logging.level);
  if (absl::Status s = log.Open(config.logging.file); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("logging.file: ", s.message()));
  }
  if (config.eal.lcores > 1) {
    // The application's threads drive the loop: there is no lcore here
    // for a shard to run on.
    return absl::InvalidArgumentError(
        "eal.lcores above 1 is for rocemud; the embedded mode runs one");
  }
  std::vector<std::string> sockets;
  for (size_t i = 0; i < config.ports.size(); ++i) {
    if (std::string p = config.VerbsSocketPath(i); !p.empty()) {
      sockets.push_back(std::move(p));
    }
  }
  if (sockets.empty()) {
    return absl::InvalidArgumentError(
        "no port has a verbs socket (verbs.enabled, verbs.socket)");
  }
  std::unique_ptr<Embedded> e(new Embedded(std::move(config), progress));
  e->sockets_ = std::move(sockets);
  // The EAL makes the thread that initialises it its main lcore and pins
  // it: that must be the progress thread, not the application's.
  std::promise<absl::Status> started;
  std::future<absl::Status> result = started.get_future();
  Embedded* self = e.get();
  e->thread_ = std::thread([self, &started] {
    pthread_setname_np(pthread_self(), ROCEMU_EMBEDDED_PROGRESS_THREAD);
    on_progress_thread = true;
    absl::Status s = self->daemon_.Init();
    if (s.ok()) s = self->daemon_.AttachRnics();
    const bool ok = s.ok();
    started.set_value(std::move(s));
    if (ok) self->RunProgress();
  });
  absl::Status s = result.get();
  if (!s.ok()) {
    e->thread_.join();
    return s;
  }
  ROCEMU_LOG_INFO("embedded: %zu verbs socket(s), first %s", e->sockets_.size(),
                  e->sockets_.front());
  return e;
}

bool Embedded::OnProgressThread() { return on_progress_thread; }

Embedded::~Embedded() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

std::optional<bool> Embedded::Pump() {
  // An application thread is no EAL lcore: registered once, it gets an
  // lcore id and with it the mempools' per-lcore caches (else every mbuf
  // allocated or freed is an operation on the shared ring).
  thread_local const bool registered = RegisterThread();
  (void)registered;
  // By default (kApp) a poll that finds the loop taken is stamped too, and
  // sends the progress thread back to sleep: else, once it held the loop
  // (a pass longer than the grace period), it re-took it after each busy
  // pass while the program's polls yielded (bulk runs' first ~100 ms at
  // 0.6x). With kThread the progress thread holds the loop most of the
  // time and must stay at it: stamping failed polls there idled it for
  // the grace period after each (perftest's ib_write_lat: 16 us -> 2 ms).
  const nic::TimeNs now = daemon_.clock().Now();
  const bool stamp_first = progress_ == Progress::kApp;
  if (stamp_first) last_pump_.store(now, std::memory_order_relaxed);
  if (running_.test_and_set(std::memory_order_acquire)) return std::nullopt;
  if (!stamp_first) last_pump_.store(now, std::memory_order_relaxed);
  const bool busy = daemon_.Pass(PassTime(now), nullptr);
  running_.clear(std::memory_order_release);
  return busy;
}

void Embedded::RunProgress() {
  const config::EalConfig& eal = daemon_.settings().eal;
  const nic::TimeNs idle_spin_ns =
      static_cast<nic::TimeNs>(eal.idle_spin_us) * 1000;
  const nic::Clock& clock = daemon_.clock();
  if (progress_ == Progress::kThread && eal.idle_sleep_us > 0) {
    daemon_.SetUpIdleWait();
  }
  nic::TimeNs last_busy = clock.Now();
  uint32_t backoff = 1;
  while (!stop_.load(std::memory_order_relaxed)) {
    const nic::TimeNs now = clock.Now();
    const nic::TimeNs pumped = last_pump_.load(std::memory_order_relaxed);
    if (pumped + kPumpGraceNs > now) {
      // The application polls, and runs the loop itself.
      if (progress_ == Progress::kThread) {  // stays at hand
        sched_yield();
      } else {
        std::this_thread::sleep_for(
            std::chrono::nanoseconds(pumped + kPumpGraceNs - now));
      }
      continue;
    }
    if (running_.test_and_set(std::memory_order_acquire)) {
      sched_yield();
      continue;
    }
    if (progress_ == Progress::kThread) {
      if (daemon_.Pass(PassTime(now), nullptr)) {
        last_busy = now;
      } else {
        daemon_.Idle(now, &last_busy);
      }
      running_.clear(std::memory_order_release);
      continue;
    }
    const bool busy = daemon_.Pass(PassTime(now), nullptr);
    running_.clear(std::memory_order_release);
    if (busy) {
      last_busy = now;
      backoff = 1;
    } else if (now - last_busy < idle_spin_ns || eal.idle_sleep_us == 0) {
      if (eal.idle_yield) sched_yield();
    } else {
      // Idle: look again after idle_sleep_us, less often the longer
      // nothing comes. (The daemon sleeps on doorbells and RX interrupts;
      // here the application's own polls are the fast path.)
      std::this_thread::sleep_for(std::chrono::microseconds(eal.idle_sleep_us) *
                                  backoff);
      backoff = std::min(backoff * 2, kMaxIdleBackoff);
    }
  }
  // Stopped: the ports close on the EAL's own thread.
  daemon_.Shutdown();
}

}  // namespace rocemu::emulator
