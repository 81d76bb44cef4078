// A scratch folder under the system temp dir, named after the process and the running
// test, emptied at the start and removed at the end of the test. Test-only.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace tunefleet::testing {

class ScratchDir {
 public:
  ScratchDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("tunefleet_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string Path(const std::string& file = "") const { return file.empty() ? path_.string() : (path_ / file).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tunefleet::testing
