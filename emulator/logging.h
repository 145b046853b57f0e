// Levelled, line-structured logging for the daemon's control path (never
// per packet): "<UTC time> <level> <message>" to stderr or a file that
// SIGHUP reopens (log rotation). Single-threaded like the rest of the daemon.
#ifndef ROCEMU_EMULATOR_LOGGING_H_
#define ROCEMU_EMULATOR_LOGGING_H_

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "config/config.h"

namespace rocemu::emulator {

class Logger {
 public:
  static Logger& Get();

  // Empty path: stderr.
  absl::Status Open(const std::string& path);
  absl::Status Reopen() { return Open(path_); }
  void set_level(config::LogLevel level) { level_ = level; }
  bool Enabled(config::LogLevel level) const { return level >= level_; }
  void Write(config::LogLevel level, const std::string& message);

 private:
  Logger() = default;
  std::string path_;
  FILE* file_ = nullptr;  // nullptr: stderr
  config::LogLevel level_ = config::LogLevel::kInfo;
};

template <typename... Args>
void Log(config::LogLevel level, const absl::FormatSpec<Args...>& format,
         const Args&... args) {
  Logger& logger = Logger::Get();
  if (logger.Enabled(level))
    logger.Write(level, absl::StrFormat(format, args...));
}

}  // namespace rocemu::emulator

#define ROCEMU_LOG_DEBUG(...) \
  ::rocemu::emulator::Log(::rocemu::config::LogLevel::kDebug, __VA_ARGS__)
#define ROCEMU_LOG_INFO(...) \
  ::rocemu::emulator::Log(::rocemu::config::LogLevel::kInfo, __VA_ARGS__)
#define ROCEMU_LOG_WARNING(...) \
  ::rocemu::emulator::Log(::rocemu::config::LogLevel::kWarning, __VA_ARGS__)
#define ROCEMU_LOG_ERROR(...) \
  ::rocemu::emulator::Log(::rocemu::config::LogLevel::kError, __VA_ARGS__)

#endif  // ROCEMU_EMULATOR_LOGGING_H_
