// JSON writing shared by the control-plane views of the session server, the
// daemon and the tools: one escaper (nlohmann-json's) and one list opener,
// so that every JSON the project prints quotes strings the same way.
// Control path only.
#ifndef ROCEMU_VERBS_SERVER_JSON_WRITER_H_
#define ROCEMU_VERBS_SERVER_JSON_WRITER_H_

#include <string>
#include <string_view>

namespace rocemu::verbs {

// Appends `s` to *out as a quoted JSON string (nlohmann's escaping: '"',
// '\\' and control bytes escaped; bytes that are not UTF-8 as U+FFFD).
void AppendJsonString(std::string_view s, std::string* out);

// Opens `"name":[` on construction and closes it with `]` on destruction;
// Next() writes the comma before every element but the first.
class JsonList {
 public:
  JsonList(std::string* out, const char* name);
  ~JsonList() { out_->push_back(']'); }
  JsonList(const JsonList&) = delete;
  JsonList& operator=(const JsonList&) = delete;

  std::string* Next() {
    if (!first_) out_->push_back(',');
    first_ = false;
    return out_;
  }

 private:
  std::string* out_;
  bool first_ = true;
};

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_SERVER_JSON_WRITER_H_
