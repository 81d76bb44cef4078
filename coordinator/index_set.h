// IndexSet: a set of config indices of one search space. A bitmap over the product when
// the product is small enough (2.4 M-config MatMul spaces cost 300 KB instead of the
// ~150 MB an unordered_set takes), a hash set beyond that. Single-threaded value.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "tunefleet/common/search_space.h"

namespace tunefleet::coordinator {

class IndexSet {
 public:
  // Spaces up to 2^31 configs (256 MiB of bits at most) use the bitmap.
  static constexpr uint64_t kBitmapLimit = uint64_t{1} << 31;

  explicit IndexSet(uint64_t space_size = 0)
      : bitmap_(space_size <= kBitmapLimit), bits_(bitmap_ ? (space_size + 63) / 64 : 0) {}

  bool contains(ConfigIndex i) const {
    if (!bitmap_) return hashed_.count(i) > 0;
    return i / 64 < bits_.size() && ((bits_[i / 64] >> (i % 64)) & 1);
  }
  // Returns true when i was not in the set. Requires i < space size.
  bool insert(ConfigIndex i) {
    if (!bitmap_) {
      bool added = hashed_.insert(i).second;
      size_ += added;
      return added;
    }
    uint64_t& word = bits_[i / 64];
    uint64_t mask = uint64_t{1} << (i % 64);
    if (word & mask) return false;
    word |= mask;
    ++size_;
    return true;
  }
  uint64_t size() const { return size_; }
  void clear() {
    bits_.clear();
    bits_.shrink_to_fit();
    hashed_.clear();
    size_ = 0;
  }

 private:
  bool bitmap_;
  std::vector<uint64_t> bits_;
  std::unordered_set<ConfigIndex> hashed_;
  uint64_t size_ = 0;
};

}  // namespace tunefleet::coordinator
