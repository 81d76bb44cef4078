#include "tunefleet/common/search_space.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <set>

namespace tunefleet {

Result<SearchSpace> SearchSpace::Create(std::vector<Parameter> params,
                                        std::vector<Constraint> constraints) {
  if (params.empty()) return InvalidArgument("search space has no parameters");
  std::set<std::string> names;
  uint64_t size = 1;
  for (const Parameter& p : params) {
    if (p.name.empty()) return InvalidArgument("search space parameter with an empty name");
    if (!names.insert(p.name).second) {
      return InvalidArgument("parameter '" + p.name + "' appears twice");
    }
    if (p.values.empty()) return InvalidArgument("parameter '" + p.name + "' has no values");
    std::set<int64_t> distinct(p.values.begin(), p.values.end());
    if (distinct.size() != p.values.size()) {
      return InvalidArgument("parameter '" + p.name + "' lists a value twice");
    }
    if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / p.values.size()) {
      return InvalidArgument("search space product overflows 2^63 at parameter '" + p.name + "'");
    }
    size *= p.values.size();
  }
  return SearchSpace(std::move(params), std::move(constraints));
}

SearchSpace::SearchSpace(std::vector<Parameter> params, std::vector<Constraint> constraints)
    : params_(std::move(params)), constraints_(std::move(constraints)) {
  size_ = 1;
  for (const Parameter& p : params_) {
    radix_.push_back(p.values.size());
    size_ *= p.values.size();
  }
}

void SearchSpace::DecodeInto(ConfigIndex index, Config& out) const {
  assert(index < size_);
  out.resize(params_.size());
  for (size_t i = params_.size(); i-- > 0;) {
    out[i] = params_[i].values[index % radix_[i]];
    index /= radix_[i];
  }
}

Config SearchSpace::Decode(ConfigIndex index) const {
  Config out;
  DecodeInto(index, out);
  return out;
}

Result<ConfigIndex> SearchSpace::Encode(const Config& config) const {
  if (config.size() != params_.size()) {
    return InvalidArgument("config has " + std::to_string(config.size()) + " values, space has " +
                           std::to_string(params_.size()) + " parameters");
  }
  ConfigIndex index = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& vals = params_[i].values;
    auto it = std::find(vals.begin(), vals.end(), config[i]);
    if (it == vals.end()) {
      return InvalidArgument(params_[i].name + "=" + std::to_string(config[i]) +
                             " is not one of the parameter's values");
    }
    index = index * radix_[i] + static_cast<ConfigIndex>(it - vals.begin());
  }
  return index;
}

Result<Config> SearchSpace::FromNamed(const std::vector<std::pair<std::string, int64_t>>& named) const {
  Config config;
  config.reserve(params_.size());
  for (const auto& param : params_) {
    auto it = std::find_if(named.begin(), named.end(), [&](const auto& nv) { return nv.first == param.name; });
    if (it == named.end()) return InvalidArgument("the config lacks the parameter '" + param.name + "'");
    config.push_back(it->second);
  }
  return config;
}

int SearchSpace::IndexOf(std::string_view name) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int64_t SearchSpace::Get(const Config& config, std::string_view name) const {
  int i = IndexOf(name);
  assert(i >= 0 && static_cast<size_t>(i) < config.size());
  return config[static_cast<size_t>(i)];
}

Status SearchSpace::Validate(const Config& config) const {
  if (config.size() != params_.size()) {
    return InvalidArgument("config has " + std::to_string(config.size()) + " values, space has " +
                           std::to_string(params_.size()) + " parameters");
  }
  std::string reason;
  for (const Constraint& c : constraints_) {
    if (!c.check(*this, config, &reason)) return InvalidArgument(c.name + ": " + reason);
  }
  return Status::Ok();
}

bool SearchSpace::IsValid(const Config& config) const {
  assert(config.size() == params_.size());
  return std::all_of(constraints_.begin(), constraints_.end(),
                     [&](const Constraint& c) { return c.check(*this, config, nullptr); });
}

bool SearchSpace::IsValidIndex(ConfigIndex index) const { return index < size_ && IsValid(Decode(index)); }

Status SearchSpace::ValidateIndex(ConfigIndex index) const {
  if (index >= size_) {
    return InvalidArgument("config index " + std::to_string(index) + " is outside the space of " +
                           std::to_string(size_) + " configs");
  }
  return Validate(Decode(index));
}

void SearchSpace::ForEachValid(const std::function<bool(ConfigIndex)>& fn) const {
  Config config;
  for (ConfigIndex i = 0; i < size_; ++i) {
    DecodeInto(i, config);
    if (IsValid(config) && !fn(i)) return;
  }
}

std::vector<ConfigIndex> SearchSpace::EnumerateValid() const {
  std::vector<ConfigIndex> out;
  ForEachValid([&](ConfigIndex i) {
    out.push_back(i);
    return true;
  });
  return out;
}

std::string SearchSpace::Describe(const Config& config) const {
  std::string out;
  for (size_t i = 0; i < params_.size() && i < config.size(); ++i) {
    if (i) out += ' ';
    out += params_[i].name + "=" + std::to_string(config[i]);
  }
  return out;
}

}  // namespace tunefleet
