//===- CheckpointIOTest.cpp - Checkpoint directories and training state ---===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "CheckpointIO.h"

#include "TempDir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace infir2::rt;
using infir2::rt::test::TempDir;
namespace fs = std::filesystem;

TEST(CheckpointIO, TrainerStateRoundTripsThroughJson) {
  TempDir dir;
  std::mt19937_64 rng(42);
  rng.discard(7);
  std::ostringstream os;
  os << rng;
  TrainerState s{12, 11, 6144, os.str()};
  ASSERT_TRUE(writeTrainerState(dir.str(), s));
  EXPECT_TRUE(fs::exists(dir / "trainer_state.json"));
  Expected<TrainerState> back = readTrainerState(dir.str());
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(back->step, 12);
  EXPECT_EQ(back->updates, 11);
  EXPECT_EQ(back->dataPosition, 6144);
  std::mt19937_64 restored;
  std::istringstream(back->rng) >> restored;
  EXPECT_EQ(restored, rng);
}

TEST(CheckpointIO, BadTrainerStateIsNamed) {
  Expected<TrainerState> s = parseTrainerState("{\"step\": 1", "st.json");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "st.json: not a JSON object");
  s = parseTrainerState(R"({"step": 1, "updates": -1, "data_position": 0,
                            "rng": "1"})",
                        "st.json");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "st.json: 'updates' is missing or not a non-negative integer");
  s = parseTrainerState(R"({"step": 1, "updates": 1, "data_position": 0})",
                        "st.json");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "st.json: 'rng' is missing or not a string");
}

TEST(CheckpointIO, FindsTheNewestStep) {
  TempDir dir;
  for (const char *d : {"step-000003", "step-000012", "step-000020.tmp"})
    fs::create_directories(dir / d);
  Expected<std::string> found = findCheckpointDir(dir.str());
  ASSERT_TRUE(found) << found.message();
  EXPECT_EQ(*found, dir / "step-000012");

  ASSERT_TRUE(
      writeTrainerState(dir / "step-000003", TrainerState{3, 3, 0, ""}));
  found = findCheckpointDir(dir / "step-000003");
  ASSERT_TRUE(found) << found.message();
  EXPECT_EQ(*found, dir / "step-000003");

  fs::create_directories(dir / "empty");
  found = findCheckpointDir(dir / "empty");
  ASSERT_FALSE(found);
  EXPECT_EQ(found.message(), dir / "empty" + ": no checkpoint (no "
                                             "trainer_state.json, no step-* "
                                             "directory)");
}

TEST(CheckpointIO, PublishesAtomically) {
  TempDir dir;
  std::string warning;
  std::string seenTmp;
  Status s = publishCheckpoint(
      dir.str(), 5,
      [&](const std::string &tmp) {
        seenTmp = tmp;
        std::ofstream(tmp + "/a.txt") << "first";
        // Nothing is visible under the final name while writing.
        EXPECT_FALSE(fs::exists(dir / "step-000005"));
        return Status::ok();
      },
      warning);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(seenTmp, dir / "step-000005.tmp");
  EXPECT_TRUE(fs::exists(dir / "step-000005/a.txt"));
  EXPECT_FALSE(fs::exists(dir / "step-000005.tmp"));

  // A second save of the same step replaces the first whole.
  s = publishCheckpoint(
      dir.str(), 5,
      [&](const std::string &tmp) {
        std::ofstream(tmp + "/b.txt") << "second";
        return Status::ok();
      },
      warning);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(warning.empty()) << warning;
  EXPECT_TRUE(fs::exists(dir / "step-000005/b.txt"));
  EXPECT_FALSE(fs::exists(dir / "step-000005/a.txt"));
  EXPECT_FALSE(fs::exists(dir / "step-000005.old"));
  EXPECT_FALSE(fs::exists(dir / "step-000005.tmp"));

  // A failed write leaves neither a temporary directory nor a checkpoint.
  s = publishCheckpoint(
      dir.str(), 6, [&](const std::string &) { return Status(fail("no")); },
      warning);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "no");
  EXPECT_FALSE(fs::exists(dir / "step-000006"));
  EXPECT_FALSE(fs::exists(dir / "step-000006.tmp"));
}

TEST(CheckpointIO, SaveDirectoryMustBeWritable) {
  TempDir dir;
  ASSERT_TRUE(prepareSaveDir(dir / "a/b"));
  EXPECT_TRUE(fs::is_directory(dir / "a/b"));
  EXPECT_FALSE(fs::exists(dir / "a/b/.write-test"));
  Status s = prepareSaveDir("/dev/null/ck");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "cannot write checkpoints to /dev/null/ck: Not a "
                         "directory");
}
