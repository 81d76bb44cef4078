// A coordinator Store's RocksDB folder opened past Store, for tests that corrupt or
// remove what Store wrote (Store owns the layout: Store::ColumnFamilyNames,
// Store::TaskRecordKey). Test-only.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "coordinator/store.h"

namespace tunefleet::testing {

// The column families Store opens, in its order (kb is [1], tasks [2], meta [4]).
inline std::vector<rocksdb::ColumnFamilyDescriptor> StoreFamilies() {
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& name : coordinator::Store::ColumnFamilyNames()) {
    families.emplace_back(name, rocksdb::ColumnFamilyOptions());
  }
  return families;
}

// Writes past Store to the database in dir (no Store may have it open): fn gets the
// tasks and meta column families.
inline void WriteRawStore(const std::filesystem::path& dir,
                          const std::function<void(rocksdb::DB&, rocksdb::ColumnFamilyHandle* tasks,
                                                   rocksdb::ColumnFamilyHandle* meta)>& fn) {
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), dir.string(), StoreFamilies(), &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  fn(*db, handles[2], handles[4]);
  for (auto* h : handles) (void)db->DestroyColumnFamilyHandle(h);
}

}  // namespace tunefleet::testing
