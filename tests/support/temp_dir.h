// temp_dir.h — the one temporary-directory fixture of the tests: a fresh
// /tmp/moetrain-<suite>.<test>-XXXXXX, removed at the end of the test unless
// the test failed (then its path is printed, for inspection).
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <string>

namespace mt::testing {

class TempDir {
 public:
  TempDir() {
    std::string name = "test";
    if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info())
      name = std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name)
      if (c == '/') c = '_';
    std::string tmpl = "/tmp/moetrain-" + name + "-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = tmpl;
  }
  ~TempDir() {
    if (::testing::Test::HasFailure()) {
      std::cerr << "[test] keeping " << path_ << " for inspection\n";
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

}  // namespace mt::testing
