//===- TempDir.h - A scratch directory per test -----------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TEST_UNIT_DRIVER_TEMPDIR_H
#define INFIR2_TEST_UNIT_DRIVER_TEMPDIR_H

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace infir2::rt::test {

/// A fresh directory named after the running test, removed afterwards.
class TempDir {
public:
  TempDir() {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("infir2-driver-" + std::string(info->test_suite_name()) + "-" +
             info->name() + "-" + std::to_string(getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }

  std::string operator/(const std::string &name) const {
    return (path_ / name).string();
  }
  std::string str() const { return path_.string(); }

  /// Writes `bytes` to `name` and returns its path.
  std::string write(const std::string &name, const std::string &bytes) const {
    std::string p = *this / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

private:
  std::filesystem::path path_;
};

} // namespace infir2::rt::test

#endif // INFIR2_TEST_UNIT_DRIVER_TEMPDIR_H
