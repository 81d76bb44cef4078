#include "window_attrs.h"

#include <algorithm>
#include <vector>

#include "space_util.h"

namespace tunefleet::window_attrs {
namespace {

using space_util::N;

std::string What(const OpKey& key, const std::string& name) { return key.op_type + " attr '" + name + "'"; }

template <size_t K>
std::string Text(const std::array<int64_t, K>& v) {
  std::string text;
  for (int64_t x : v) text += (text.empty() ? "" : ",") + N(x);
  return text;
}

template <size_t K>
void Write(OpKey& key, const std::string& name, const std::array<int64_t, K>& v, std::optional<int64_t> omit_at) {
  if (omit_at && std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == *omit_at; })) {
    key.attrs.erase(name);
  } else {
    key.attrs[name] = Text(v);
  }
}

template <size_t K>
Status CheckBounds(const OpKey& key, const std::string& name, const std::array<int64_t, K>& v, int64_t low) {
  for (int64_t x : v) {
    if (x < low || x > kMaxWindowAttr) {
      return InvalidArgument(What(key, name) + " must be between " + N(low) + " and " + N(kMaxWindowAttr) + ", got " +
                             Text(v));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Hw> ReadHw(const OpKey& key, const std::string& name, int64_t low, std::optional<Hw> fallback,
                  const std::string& example) {
  const auto it = key.attrs.find(name);
  if (it == key.attrs.end()) {
    if (fallback) return *fallback;
    return InvalidArgument(key.op_type + " needs attrs." + name + " (\"" + example + "\")");
  }
  TF_ASSIGN_OR_RETURN(const std::vector<int64_t> v, space_util::ParseIntList(it->second, What(key, name), example));
  Hw hw;
  if (v.size() == 1) {
    hw = {v[0], v[0]};
  } else if (v.size() == 2) {
    hw = {v[0], v[1]};
  } else if (v.size() == 4) {
    if (v[0] != 1 || v[1] != 1) {
      return InvalidArgument(What(key, name) + " with 4 values is in NCHW order; its N and C entries must be 1");
    }
    hw = {v[2], v[3]};
  } else {
    return InvalidArgument(What(key, name) + " takes 1, 2 or 4 values ([h, w] or NCHW), got " +
                           N(static_cast<int64_t>(v.size())));
  }
  TF_RETURN_IF_ERROR(CheckBounds(key, name, hw, low));
  return hw;
}

Result<Pads> ReadPads(const OpKey& key) {
  const auto it = key.attrs.find("pads");
  if (it == key.attrs.end()) return Pads{0, 0, 0, 0};
  TF_ASSIGN_OR_RETURN(const std::vector<int64_t> v, space_util::ParseIntList(it->second, What(key, "pads"), "1,1,1,1"));
  Pads p;
  if (v.size() == 1) {
    p = {v[0], v[0], v[0], v[0]};
  } else if (v.size() == 2) {
    p = {v[0], v[0], v[1], v[1]};
  } else if (v.size() == 4) {
    p = {v[0], v[1], v[2], v[3]};
  } else {
    return InvalidArgument(What(key, "pads") + " takes 1, 2 or 4 values ([top, bottom, left, right]), got " +
                           N(static_cast<int64_t>(v.size())));
  }
  TF_RETURN_IF_ERROR(CheckBounds(key, "pads", p, 0));
  return p;
}

void WriteHw(OpKey& key, const std::string& name, const Hw& values, std::optional<int64_t> omit_at) {
  Write(key, name, values, omit_at);
}

void WritePads(OpKey& key, const Pads& pads) { Write(key, "pads", pads, int64_t{0}); }

}  // namespace tunefleet::window_attrs
