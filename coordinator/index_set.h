// IndexSet: a set of config indices of one search space. A hash set while it is small,
// a bitmap over the product once the bitmap is the smaller of the two (2.4 M-config
// MatMul spaces cost 300 KB of bits instead of the ~150 MB an unordered_set takes when
// exhausted). Starting sparse matters as much: a 10,000-op submission with budgets of
// 50 used to zero 6 GB of bitmaps before answering. Single-threaded value.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "tunefleet/common/search_space.h"

namespace tunefleet::coordinator {

class IndexSet {
 public:
  // Spaces up to 2^31 configs (256 MiB of bits at most) may switch to the bitmap.
  static constexpr uint64_t kBitmapLimit = uint64_t{1} << 31;
  // About what one unordered_set entry costs, in bytes: past size * this > bitmap bytes,
  // the bitmap is smaller.
  static constexpr uint64_t kHashedEntryBytes = 40;

  explicit IndexSet(uint64_t space_size = 0) : space_size_(space_size) {}

  bool contains(ConfigIndex i) const {
    if (bits_.empty()) return hashed_.count(i) > 0;
    return i / 64 < bits_.size() && ((bits_[i / 64] >> (i % 64)) & 1);
  }
  // Returns true when i was not in the set. Requires i < space size.
  bool insert(ConfigIndex i) {
    if (bits_.empty()) {
      bool added = hashed_.insert(i).second;
      size_ += added;
      if (added && space_size_ > 0 && space_size_ <= kBitmapLimit &&
          hashed_.size() * kHashedEntryBytes > space_size_ / 8) ToBitmap();
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
  bool is_bitmap() const { return !bits_.empty(); }
  void clear() {
    bits_.clear();
    bits_.shrink_to_fit();
    hashed_.clear();
    size_ = 0;
  }

 private:
  void ToBitmap() {
    bits_.assign((space_size_ + 63) / 64, 0);
    for (ConfigIndex i : hashed_) bits_[i / 64] |= uint64_t{1} << (i % 64);
    hashed_ = {};
  }

  uint64_t space_size_;
  std::vector<uint64_t> bits_;  // empty while hashed
  std::unordered_set<ConfigIndex> hashed_;
  uint64_t size_ = 0;
};

}  // namespace tunefleet::coordinator
