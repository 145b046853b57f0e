// A directory of one test's own under /tmp (its sockets, captures and
// logs), removed with everything in it when the test is done.
#ifndef ROCEMU_TESTS_TEMP_DIR_H_
#define ROCEMU_TESTS_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace rocemu::test_support {

class TempDir {
 public:
  TempDir() = default;
  ~TempDir() { Remove(); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Makes /tmp/rocemu-<tag>-XXXXXX (an earlier one is removed first);
  // false if it could not be made.
  bool Make(const std::string& tag) {
    Remove();
    std::string tmpl = "/tmp/rocemu-" + tag + "-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return false;
    path_ = std::move(tmpl);
    return true;
  }
  // The directory and everything in it; nothing if none was made.
  void Remove() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    path_.clear();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace rocemu::test_support

#endif  // ROCEMU_TESTS_TEMP_DIR_H_
