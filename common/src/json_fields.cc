#include "tunefleet/common/json_fields.h"

#include <cstring>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

namespace tunefleet {
namespace {

template <typename Input>
Result<nlohmann::json> Parse(Input&& input, const std::string& where) {
  std::vector<std::set<std::string>> keys;  // per open object
  std::string twice;
  auto no_duplicates = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::object_start) keys.emplace_back();
    if (event == nlohmann::json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == nlohmann::json::parse_event_t::key && !keys.empty() &&
        !keys.back().insert(parsed.get<std::string>()).second && twice.empty()) {
      twice = parsed.get<std::string>();
    }
    return true;
  };
  const std::string at = where.empty() ? "" : where + ": ";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(std::forward<Input>(input), no_duplicates);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(at + "not valid JSON (" + e.what() + ")");
  }
  if (!twice.empty()) return InvalidArgument(at + "field '" + twice + "' is given twice in one object; keep one");
  return j;
}

}  // namespace

Result<nlohmann::json> ParseJson(std::istream& in, const std::string& where) { return Parse(in, where); }
Result<nlohmann::json> ParseJson(std::string_view text, const std::string& where) { return Parse(text, where); }

Status CheckKnownFields(const nlohmann::json& object, std::initializer_list<const char*> known,
                        const std::string& where) {
  if (!object.is_object()) return Status::Ok();
  for (const auto& [name, value] : object.items()) {
    if (name == "comment") continue;
    bool ok = false;
    for (const char* k : known) ok = ok || name == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return InvalidArgument(where + ": unknown field '" + name + "' (known: " + list + ")");
  }
  return Status::Ok();
}

}  // namespace tunefleet
