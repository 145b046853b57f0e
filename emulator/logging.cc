#include "emulator/logging.h"

#include <cerrno>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"

namespace rocemu::emulator {

Logger& Logger::Get() {
  static Logger* logger = new Logger();
  return *logger;
}

absl::Status Logger::Open(const std::string& path) {
  FILE* f = nullptr;
  if (!path.empty()) {
    f = std::fopen(path.c_str(), "a");
    if (f == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot open log file ", path,
                                                 ": ", std::strerror(errno)));
    }
    setvbuf(f, nullptr, _IOLBF, 0);
  }
  if (file_ != nullptr) std::fclose(file_);
  file_ = f;
  path_ = path;
  return absl::OkStatus();
}

void Logger::Write(config::LogLevel level, const std::string& message) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc;
  gmtime_r(&ts.tv_sec, &utc);
  char when[32];
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &utc);
  std::string_view name = config::LogLevelName(level);
  std::fprintf(file_ != nullptr ? file_ : stderr, "%s.%03ldZ %.*s %s\n", when,
               ts.tv_nsec / 1000000, static_cast<int>(name.size()), name.data(),
               message.c_str());
}

}  // namespace rocemu::emulator
