//===- CheckpointIOTest.cpp - Checkpoint directories and training state ---===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "io/CheckpointIO.h"

#include "TempDir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace infir2::rt;
using infir2::rt::test::TempDir;
namespace fs = std::filesystem;

/// A generator's state as the trainer saves it.
static std::string rngState() {
  std::ostringstream os;
  os << std::mt19937_64(7);
  return os.str();
}

TEST(CheckpointIO, TrainerStateRoundTripsThroughJson) {
  TempDir dir;
  std::mt19937_64 rng(42);
  rng.discard(7);
  std::ostringstream os;
  os << rng;
  TrainerState s{12, 11, 6144, os.str(), {}};
  s.files["model.safetensors"] = FileDigest{1234567890123ull, 0x0badf00d};
  s.files["optimizer.safetensors"] = FileDigest{0, 0};
  ASSERT_TRUE(writeTrainerState(dir.str(), s));
  EXPECT_TRUE(fs::exists(dir / "trainer_state.json"));
  Expected<TrainerState> back = readTrainerState(dir.str());
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(back->step, 12);
  EXPECT_EQ(back->updates, 11);
  EXPECT_EQ(back->dataPosition, 6144);
  EXPECT_EQ(back->files, s.files);
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
  s = parseTrainerState(
      R"({"step": 1, "updates": 1, "data_position": 0, "rng": "1"})",
      "st.json");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "st.json: 'files' (the checkpoint's file digests) "
                         "is missing or not an object");
  for (const char *entry : {R"("a": {"bytes": 1, "crc32": "0BADF00D"})",
                            R"("a": {"bytes": -1, "crc32": "0badf00d"})",
                            R"("a": {"crc32": "0badf00d"})",
                            R"("a": {"bytes": 1, "crc32": "badf00d"})"}) {
    s = parseTrainerState(std::string(R"({"step": 1, "updates": 1,
        "data_position": 0, "rng": "1", "files": {)") +
                              entry + "}}",
                          "st.json");
    ASSERT_FALSE(s) << entry;
    EXPECT_EQ(s.message(), "st.json: 'files' entry 'a' needs 'bytes' (a "
                           "non-negative integer) and 'crc32' (8 lowercase "
                           "hex digits)");
  }
  for (const char *name : {"../x", "trainer_state.json", ""}) {
    s = parseTrainerState(std::string(R"({"step": 1, "updates": 1,
        "data_position": 0, "rng": "1", "files": {")") +
                              name + R"(": {"bytes": 1, "crc32": "0badf00d"}}})",
                          "st.json");
    ASSERT_FALSE(s) << name;
    EXPECT_EQ(s.message(), std::string("st.json: 'files' names '") + name +
                               "', not a file of the checkpoint");
  }
}

TEST(CheckpointIO, DamagedGeneratorStateIsRefused) {
  std::string state = rngState();
  for (const std::string &rng :
       {std::string("1 2 3"), state + " 9", state.substr(0, state.size() / 2),
        std::string("")}) {
    Expected<TrainerState> s = parseTrainerState(
        R"({"step": 1, "updates": 1, "data_position": 0, "files": {},
            "rng": ")" + rng + "\"}",
        "st.json");
    ASSERT_FALSE(s) << rng;
    EXPECT_EQ(s.message(),
              "st.json: 'rng' is not the state of a std::mt19937_64");
  }
  Expected<TrainerState> s = parseTrainerState(
      R"({"step": 1, "updates": 1, "data_position": 0, "files": {},
          "rng": ")" + state + "\"}",
      "st.json");
  EXPECT_TRUE(s) << s.message();
}

TEST(CheckpointIO, DigestIsZlibCrc32) {
  // CRC-32's published check value: the CRC of the ASCII digits 1..9.
  FileDigest d;
  extendDigest(d, "12345", 5);
  extendDigest(d, "6789", 4);
  EXPECT_EQ(d.bytes, 9u);
  EXPECT_EQ(d.crc32, 0xcbf43926u);
}

/// Writes `text` to `path`, returning its digest as written.
static FileDigest writeText(const fs::path &path, const std::string &text) {
  std::ofstream(path) << text;
  FileDigest d;
  extendDigest(d, text.data(), text.size());
  return d;
}

TEST(CheckpointIO, DamagedFilesAreRefusedByName) {
  TempDir dir;
  TrainerState s{3, 3, 0, "", {}};
  s.files["w.bin"] = writeText(dir / "w.bin", "weights!");
  ASSERT_TRUE(verifyCheckpointFiles(dir.str(), s));
  // The same length, one byte changed.
  writeText(dir / "w.bin", "weighTs!");
  Status st = verifyCheckpointFiles(dir.str(), s);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(), dir / "w.bin" + ": CRC-32 " + "c38cb286" +
                              ", but trainer_state.json recorded " +
                              "fbc1f466 (the file is damaged)");
  writeText(dir / "w.bin", "weigh");
  st = verifyCheckpointFiles(dir.str(), s);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(), dir / "w.bin" + ": 5 bytes, but trainer_state.json "
                                          "recorded 8 (truncated or damaged)");
  fs::remove(dir / "w.bin");
  st = verifyCheckpointFiles(dir.str(), s);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(),
            dir / "w.bin" + ": cannot open: No such file or directory");
}

TEST(CheckpointIO, FindsTheNewestStep) {
  TempDir dir;
  for (const char *d : {"step-000003", "step-000012", "step-000020.tmp"})
    fs::create_directories(dir / d);
  Expected<std::string> found = findCheckpointDir(dir.str());
  ASSERT_TRUE(found) << found.message();
  EXPECT_EQ(*found, dir / "step-000012");

  ASSERT_TRUE(
      writeTrainerState(dir / "step-000003", TrainerState{3, 3, 0, "", {}}));
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
      dir.str(), TrainerState{5, 5, 0, rngState(), {}},
      [&](const std::string &tmp) -> Expected<FileDigests> {
        seenTmp = tmp;
        FileDigests written{{"a.txt", writeText(tmp + "/a.txt", "first")}};
        // Nothing is visible under the final name while writing.
        EXPECT_FALSE(fs::exists(dir / "step-000005"));
        return written;
      },
      warning);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(seenTmp, dir / "step-000005.tmp");
  EXPECT_TRUE(fs::exists(dir / "step-000005/a.txt"));
  EXPECT_FALSE(fs::exists(dir / "step-000005.tmp"));
  // The state file records what was written.
  Expected<TrainerState> back = readTrainerState(dir / "step-000005");
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(back->step, 5);
  ASSERT_EQ(back->files.size(), 1u);
  EXPECT_EQ(back->files["a.txt"].bytes, 5u);
  EXPECT_TRUE(verifyCheckpointFiles(dir / "step-000005", *back));

  // A second save of the same step replaces the first whole.
  s = publishCheckpoint(
      dir.str(), TrainerState{5, 5, 0, rngState(), {}},
      [&](const std::string &tmp) -> Expected<FileDigests> {
        return FileDigests{{"b.txt", writeText(tmp + "/b.txt", "second")}};
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
      dir.str(), TrainerState{6, 6, 0, rngState(), {}},
      [&](const std::string &) -> Expected<FileDigests> { return fail("no"); },
      warning);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "no");
  EXPECT_FALSE(fs::exists(dir / "step-000006"));
  EXPECT_FALSE(fs::exists(dir / "step-000006.tmp"));

  // So does a file that does not read back as it was written (a short or
  // damaged write the writer did not see), and the old checkpoint stays.
  s = publishCheckpoint(
      dir.str(), TrainerState{5, 5, 0, rngState(), {}},
      [&](const std::string &tmp) -> Expected<FileDigests> {
        FileDigest d = writeText(tmp + "/c.txt", "third");
        writeText(tmp + "/c.txt", "thi");
        return FileDigests{{"c.txt", d}};
      },
      warning);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), dir / "step-000005.tmp/c.txt" +
                             ": 3 bytes, but the checkpoint writer recorded 5 "
                             "(truncated or damaged)");
  EXPECT_FALSE(fs::exists(dir / "step-000005.tmp"));
  EXPECT_TRUE(fs::exists(dir / "step-000005/b.txt"));
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
