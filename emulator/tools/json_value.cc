#include "emulator/tools/json_value.h"

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "verbs/server/json_writer.h"

namespace rocemu::tools {

// Builds the tool's view of a document nlohmann-json parsed: members in
// document order (ordered_json), numbers as the daemon wrote them.
class JsonParser {
 public:
  // Deeper nesting than the daemon ever writes is refused, not recursed.
  static constexpr int kMaxDepth = 64;

  static absl::Status Convert(
      const std::shared_ptr<const nlohmann::ordered_json>& doc,
      const nlohmann::ordered_json& j, int depth, JsonValue* out) {
    if (depth > kMaxDepth) {
      return absl::InvalidArgumentError("JSON: nested too deeply");
    }
    switch (j.type()) {
      case nlohmann::ordered_json::value_t::boolean:
        out->kind_ = JsonValue::Kind::kBool;
        out->bool_ = j.get<bool>();
        out->text_ = out->bool_ ? "true" : "false";
        return absl::OkStatus();
      case nlohmann::ordered_json::value_t::number_unsigned:
      case nlohmann::ordered_json::value_t::number_integer:
      case nlohmann::ordered_json::value_t::number_float:
        out->kind_ = JsonValue::Kind::kNumber;
        out->number_ = j.get<double>();
        // Integers print exactly as stored (64-bit counters past 2^53).
        out->text_ = j.dump();
        return absl::OkStatus();
      case nlohmann::ordered_json::value_t::string:
        out->kind_ = JsonValue::Kind::kString;
        out->text_ = j.get<std::string>();
        return absl::OkStatus();
      case nlohmann::ordered_json::value_t::array:
        out->kind_ = JsonValue::Kind::kArray;
        out->doc_ = doc;
        out->node_ = &j;
        out->items_.resize(j.size());
        for (size_t i = 0; i < j.size(); ++i) {
          if (absl::Status s = Convert(doc, j[i], depth + 1, &out->items_[i]);
              !s.ok()) {
            return s;
          }
        }
        return absl::OkStatus();
      case nlohmann::ordered_json::value_t::object:
        out->kind_ = JsonValue::Kind::kObject;
        out->doc_ = doc;
        out->node_ = &j;
        out->members_.reserve(j.size());
        for (const auto& [k, m] : j.items()) {
          out->members_.emplace_back(k, JsonValue());
          if (absl::Status s =
                  Convert(doc, m, depth + 1, &out->members_.back().second);
              !s.ok()) {
            return s;
          }
        }
        return absl::OkStatus();
      default:  // null
        return absl::OkStatus();
    }
  }
};

absl::StatusOr<JsonValue> JsonValue::Parse(std::string_view text) {
  auto doc = std::make_shared<const nlohmann::ordered_json>(
      nlohmann::ordered_json::parse(text.begin(), text.end(), nullptr,
                                    /*allow_exceptions=*/false));
  if (doc->is_discarded()) {
    return absl::InvalidArgumentError("JSON: not a valid document");
  }
  JsonValue v;
  if (absl::Status s = JsonParser::Convert(doc, *doc, 0, &v); !s.ok()) {
    return s;
  }
  return v;
}

const JsonValue& JsonValue::operator[](std::string_view key) const {
  static const JsonValue* const kNull = new JsonValue();
  for (const auto& [k, v] : members_) {
    if (k == key) return v;
  }
  return *kNull;
}

std::string JsonValue::ToString() const {
  if (kind_ == Kind::kNull) return "-";
  if (node_ != nullptr) return verbs::DumpJson(*node_);
  return text_;
}

}  // namespace rocemu::tools
