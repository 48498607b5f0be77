// rundir_run_dir_test.cpp — the run directory's files (src/rundir) and the durable
// writes under them: TFRecord framing against CRC-32C's published check
// value, the TensorBoard records decoded back (and equal to protobuf's own
// bytes), metric_scalars, MetricsLog (a resume keeps exactly the steps up to
// the checkpoint in both files), the events log, heartbeats, the metrics
// readers, and write_file_atomic; every failed write leaves the previous file
// as it was, with an error naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/file_io.h"
#include "rundir/events_log.h"
#include "rundir/heartbeat.h"
#include "rundir/metrics_log.h"
#include "unit/tensorboard_event.pb.h"  // protoc output (build/tests/proto)
#include "rundir/tensorboard_writer.h"
#include "rundir/tfrecord.h"
#include "support/e2e.h"
#include "support/faulty_file_system.h"

namespace mt {
namespace {

using nlohmann::json;
using testing::FaultyFileSystem;

std::string slurp(const std::string& path) {
  auto r = read_file(path);
  return r ? r.value() : std::string();
}

// Every Event of a TensorBoard file, decoded; fails on a torn or corrupt record.
std::vector<moetrain::tensorboard_test::Event> read_events_file(const std::string& path) {
  const std::string bytes = slurp(path);
  std::vector<moetrain::tensorboard_test::Event> out;
  size_t at = 0;
  std::string payload;
  while (tfrecord_next(bytes, &at, &payload)) {
    moetrain::tensorboard_test::Event e;
    EXPECT_TRUE(e.ParseFromString(payload));
    out.push_back(e);
  }
  EXPECT_EQ(at, bytes.size()) << path << ": bytes after the last whole record";
  return out;
}

TEST(TfRecord, Crc32cMatchesTheCheckValue) {
  // CRC-32C's check value (RFC 3720, B.4: the CRC of "123456789").
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(masked_crc32c("123456789", 9), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(TfRecord, FramesRoundTripAndTornRecordsAreRejected) {
  const std::string a = tfrecord_frame("first"), b = tfrecord_frame(std::string(1000, 'x'));
  ASSERT_EQ(a.size(), 16u + 5u);
  EXPECT_EQ(uint8_t(a[0]), 5);  // the length, little-endian
  const std::string both = a + b;
  size_t at = 0;
  std::string p;
  ASSERT_TRUE(tfrecord_next(both, &at, &p));
  EXPECT_EQ(p, "first");
  ASSERT_TRUE(tfrecord_next(both, &at, &p));
  EXPECT_EQ(p, std::string(1000, 'x'));
  EXPECT_EQ(at, both.size());
  EXPECT_FALSE(tfrecord_next(both, &at, &p));
  // Torn at every length, and one flipped payload byte: never a record.
  for (size_t cut = 0; cut < b.size(); ++cut) {
    size_t z = 0;
    EXPECT_FALSE(tfrecord_next(std::string_view(b).substr(0, cut), &z, &p)) << cut;
    EXPECT_EQ(z, 0u);
  }
  std::string bad = a;
  bad[13] ^= 1;
  at = 0;
  EXPECT_FALSE(tfrecord_next(bad, &at, &p));
}

TEST(TensorBoardWriter, RecordsDecodeToFileVersionThenScalars) {
  const ScalarStep s{7, 1700000000.5, {{"loss", 2.5}, {"bucket_eval_loss/code/q0", 3.25}}};
  moetrain::tensorboard_test::Event e;
  size_t at = 0;
  std::string p;
  const std::string head = tensorboard_file_version_record(12.0);
  ASSERT_TRUE(tfrecord_next(head, &at, &p));
  ASSERT_TRUE(e.ParseFromString(p));
  EXPECT_EQ(e.file_version(), "brain.Event:2");
  EXPECT_EQ(e.wall_time(), 12.0);
  at = 0;
  const std::string rec = tensorboard_scalars_record(s);
  ASSERT_TRUE(tfrecord_next(rec, &at, &p));
  ASSERT_TRUE(e.ParseFromString(p));
  EXPECT_EQ(e.step(), 7);
  EXPECT_EQ(e.wall_time(), 1700000000.5);
  ASSERT_EQ(e.summary().value_size(), 2);
  EXPECT_EQ(e.summary().value(0).tag(), "loss");
  EXPECT_EQ(e.summary().value(0).simple_value(), 2.5f);
  EXPECT_EQ(e.summary().value(1).tag(), "bucket_eval_loss/code/q0");
  EXPECT_EQ(e.summary().value(1).simple_value(), 3.25f);
  // Byte for byte what protobuf itself writes for the same messages, a zero
  // scalar and a negative step included.
  for (const ScalarStep& c : {s, ScalarStep{0, 0.0, {{"zero", 0.0}}}, ScalarStep{-3, 1.0, {}}}) {
    moetrain::tensorboard_test::Event m;
    m.set_wall_time(c.wall_time);
    m.set_step(c.step);
    m.mutable_summary();
    for (const auto& [tag, v] : c.scalars) {
      auto* val = m.mutable_summary()->add_value();
      val->set_tag(tag);
      val->set_simple_value(float(v));
    }
    EXPECT_EQ(tensorboard_scalars_record(c), tfrecord_frame(m.SerializeAsString())) << c.step;
  }
  moetrain::tensorboard_test::Event v;
  v.set_wall_time(12.0);
  v.set_file_version("brain.Event:2");
  EXPECT_EQ(head, tfrecord_frame(v.SerializeAsString()));
}

TEST(MetricScalars, NumbersByPathAndRouterLoadAsImbalance) {
  const json line = json::parse(R"({"step": 3, "time": 5.0, "loss": 1.5, "spike": {"why": "x", "applied": false,
      "loss_z": 9.0}, "comm": {"world_size": 2, "wait_s": 0.25}, "bucket_eval_loss": {"code/q0": 2.0},
      "expert_load": [[0.5, 0.25, 0.125, 0.125], []]})");
  std::map<std::string, double> got;
  for (const auto& [tag, v] : metric_scalars(line)) EXPECT_TRUE(got.emplace(tag, v).second) << tag << " twice";
  const std::map<std::string, double> want = {{"loss", 1.5},
                                              {"spike/loss_z", 9.0},
                                              {"comm/world_size", 2},
                                              {"comm/wait_s", 0.25},
                                              {"bucket_eval_loss/code/q0", 2.0},
                                              {"router/layer_0/max_load", 2.0},
                                              {"router/layer_0/min_load", 0.5}};
  EXPECT_EQ(got, want);
}

json step_line(int64_t step) {
  return {{"step", step}, {"time", 1000.0 + double(step)}, {"loss", 10.0 / double(step)}, {"lr", 1e-3}};
}

TEST(MetricsLog, ResumeKeepsTheStepsUpToTheCheckpointInBothFiles) {
  e2e::TempDir dir;
  {
    auto log = MetricsLog::open(dir.path(), 0, TensorBoard::kOn);
    ASSERT_TRUE(log.is_ok()) << log.status().message();
    for (int64_t s = 1; s <= 6; ++s) ASSERT_TRUE(log.value()->append(step_line(s)));
  }
  auto log = MetricsLog::open(dir.path(), 4, TensorBoard::kOn);  // resumed from step 4
  ASSERT_TRUE(log.is_ok()) << log.status().message();
  for (int64_t s = 5; s <= 7; ++s) ASSERT_TRUE(log.value()->append(step_line(s)));
  const std::vector<json> rows = read_metrics_lines(dir.path());
  ASSERT_EQ(rows.size(), 7u);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i], step_line(int64_t(i) + 1));
  const auto events = read_events_file(tensorboard_dir(dir.path()) + "/" + TensorBoardWriter::kFileName);
  ASSERT_EQ(events.size(), 8u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].wall_time(), 1001.0);  // the run's first step
  for (int64_t s = 1; s <= 7; ++s) {
    const auto& e = events[size_t(s)];
    EXPECT_EQ(e.step(), s);
    EXPECT_EQ(e.wall_time(), 1000.0 + double(s));
    ASSERT_EQ(e.summary().value_size(), 2);
    EXPECT_EQ(e.summary().value(0).tag(), "loss");
    EXPECT_EQ(e.summary().value(0).simple_value(), float(10.0 / double(s)));
  }
  EXPECT_EQ(e2e::list_dir(dir.path()), (std::vector<std::string>{"metrics.jsonl", "tensorboard"}));
}

TEST(MetricsLog, OffWritesNoTensorBoardDirectory) {
  e2e::TempDir dir;
  auto log = MetricsLog::open(dir.path(), 0, TensorBoard::kOff);
  ASSERT_TRUE(log.is_ok());
  ASSERT_TRUE(log.value()->append(step_line(1)));
  EXPECT_EQ(e2e::list_dir(dir.path()), (std::vector<std::string>{"metrics.jsonl"}));
}

// Every mutating operation of a resume's rewrite, failed in turn: open()
// reports an error naming a file of the run, and both files still hold
// what they held (the metrics byte for byte; no temporary is left behind).
TEST(MetricsLog, AFailedRewriteLeavesThePreviousFilesIntact) {
  e2e::TempDir dir;
  {
    auto log = MetricsLog::open(dir.path(), 0, TensorBoard::kOn);
    ASSERT_TRUE(log.is_ok());
    for (int64_t s = 1; s <= 5; ++s) ASSERT_TRUE(log.value()->append(step_line(s)));
  }
  const std::string metrics = slurp(metrics_path(dir.path()));
  const std::string tb = tensorboard_dir(dir.path()) + "/" + TensorBoardWriter::kFileName, tb_bytes = slurp(tb);
  FaultyFileSystem counter;
  ASSERT_TRUE(MetricsLog::open(dir.path(), 5, TensorBoard::kOn, counter).is_ok());
  ASSERT_GT(counter.ops, 4);
  for (int64_t op = 1; op <= counter.ops; ++op) {
    SCOPED_TRACE("failing op " + std::to_string(op));
    FaultyFileSystem faulty;
    faulty.fail_at_op = op;
    auto log = MetricsLog::open(dir.path(), 3, TensorBoard::kOn, faulty);
    if (log.is_ok()) {  // the failure hit the last sync after both renames: nothing to keep
      ADD_FAILURE() << "open succeeded";
      continue;
    }
    EXPECT_NE(log.status().message().find(dir.path()), std::string::npos) << log.status().message();
    const std::string now = slurp(metrics_path(dir.path()));
    // Either still the old file, or (the metrics rename done, a later step
    // failed) the kept steps; never a torn file, never a temporary left.
    if (now != metrics) {
      EXPECT_EQ(read_metrics_lines(dir.path()).size(), 3u);
    }
    for (const std::string& f : e2e::list_dir(dir.path())) EXPECT_EQ(f.find(".tmp-"), std::string::npos) << f;
    for (const std::string& f : e2e::list_dir(tensorboard_dir(dir.path())))
      EXPECT_EQ(f.find(".tmp-"), std::string::npos) << f;
    const auto ev = read_events_file(tb);
    EXPECT_TRUE(ev.size() == 6u || ev.size() == 4u) << ev.size();
    // Put the run back as it was for the next case.
    std::ofstream(metrics_path(dir.path()), std::ios::binary) << metrics;
    std::ofstream(tb, std::ios::binary) << tb_bytes;
  }
}

// ---------------------------------------------------------------- durable writes

// Every mutating operation of write_file_atomic, failed in turn: an error
// naming the file, the previous content intact, no temporary left.
TEST(WriteFileAtomic, AFailedWriteKeepsThePreviousFile) {
  e2e::TempDir dir;
  const std::string path = dir / "config.toml";
  ASSERT_TRUE(write_file_atomic(path, "old = 1\n"));
  FaultyFileSystem counter;
  ASSERT_TRUE(write_file_atomic(path, "old = 1\n", counter));
  ASSERT_GE(counter.ops, 5);  // open, append, fsync, close, rename, fsync dir
  for (int64_t op = 1; op <= counter.ops; ++op) {
    SCOPED_TRACE("failing op " + std::to_string(op));
    FaultyFileSystem faulty;
    faulty.fail_at_op = op;
    const Status s = write_file_atomic(path, "new = 2\n", faulty);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
    const std::string now = slurp(path);
    if (op < counter.ops) {  // the last op syncs the directory after the rename
      EXPECT_EQ(now, "old = 1\n");
    }
    EXPECT_EQ(e2e::list_dir(dir.path()), (std::vector<std::string>{"config.toml"}));
    ASSERT_TRUE(write_file_atomic(path, "old = 1\n"));
  }
  // A heartbeat is replaced atomically but not synced: two operations fewer.
  FaultyFileSystem light;
  ASSERT_TRUE(write_file_atomic(path, "x", light, WriteDurability::kAtomicOnly));
  EXPECT_EQ(light.ops, counter.ops - 2);
}

TEST(Heartbeat, WrittenThroughTheFileSystemAndReadBack) {
  e2e::TempDir dir;
  Heartbeat h;
  h.rank = 3;
  h.pid = 42;
  h.step = 7;
  h.host = "n1";
  h.phase = "step";
  h.time = 123.5;
  write_heartbeat(dir.path(), h);
  const std::vector<Heartbeat> got = read_heartbeats(dir.path());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rank, 3);
  EXPECT_EQ(got[0].step, 7);
  EXPECT_EQ(got[0].phase, "step");
  // A failed write keeps the last heartbeat and says so once.
  FaultyFileSystem faulty;
  faulty.fail_at_op = 2;  // the append
  h.step = 8;
  ::testing::internal::CaptureStderr();
  write_heartbeat(dir.path(), h, faulty);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rank_3.json"), std::string::npos) << err;
  EXPECT_EQ(read_heartbeats(dir.path())[0].step, 7);
  EXPECT_EQ(e2e::list_dir(dir.path()), (std::vector<std::string>{"rank_3.json"}));
}

// ---------------------------------------------------------------- events

TEST(EventsLog, AppendedWithTimeAndReadBackByKind) {
  e2e::TempDir dir;
  append_event(dir.path(), {{"event", "start"}, {"step", 0}});
  append_event(dir.path(), {{"event", "checkpoint"}, {"step", 4}});
  append_event(dir.path(), {{"event", "start"}, {"step", 4}});
  std::ofstream(events_path(dir.path()), std::ios::app) << "{\"event\": \"torn";  // a crash mid-line
  const auto all = read_events(dir.path());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(all[0].contains("utc"));
  EXPECT_LE(all[0]["time"].get<double>(), all[2]["time"].get<double>());
  const auto starts = read_events(dir.path(), "start");
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[1]["step"], 4);
  // A failed append loses the event, never the run: a warning names the file.
  FaultyFileSystem faulty;
  faulty.fail_at_op = 2;
  ::testing::internal::CaptureStderr();
  append_event(dir.path(), {{"event", "spike"}}, faulty);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("events.jsonl"), std::string::npos);
  EXPECT_EQ(read_events(dir.path(), "spike").size(), 0u);
}

// ---------------------------------------------------------------- readers

TEST(MetricsReaders, LastLineStrictLoadAndBranchCopy) {
  e2e::TempDir dir;
  EXPECT_TRUE(last_metrics_line(dir.path()).is_null());
  EXPECT_EQ(latest_logged_step(dir.path()), 0);
  EXPECT_FALSE(load_metrics(dir.path()));  // no file
  {
    auto log = MetricsLog::open(dir.path(), 0, TensorBoard::kOff);
    ASSERT_TRUE(log.is_ok());
    for (int64_t s = 1; s <= 3; ++s) {
      json line = step_line(s);
      line["pad"] = std::string(size_t(40000), 'x');  // lines longer than the tail read first
      ASSERT_TRUE(log.value()->append(line));
    }
  }
  EXPECT_EQ(latest_logged_step(dir.path()), 3);
  EXPECT_EQ(last_metrics_line(dir.path())["loss"], 10.0 / 3.0);
  auto rows = load_metrics(dir.path());
  ASSERT_TRUE(rows.is_ok());
  EXPECT_EQ(rows.value().size(), 3u);
  e2e::TempDir branch;
  ASSERT_TRUE(copy_metrics_through(dir.path(), branch.path(), 2));
  EXPECT_EQ(latest_logged_step(branch.path()), 2);
  // A torn last line: the live readers skip it, the strict one names it.
  std::ofstream(metrics_path(dir.path()), std::ios::app) << "{\"step\": 4, \"lo";
  EXPECT_EQ(latest_logged_step(dir.path()), 3);
  EXPECT_EQ(read_metrics_lines(dir.path()).size(), 3u);
  auto strict = load_metrics(dir.path());
  ASSERT_FALSE(strict);
  EXPECT_NE(strict.status().message().find("metrics.jsonl:4:"), std::string::npos) << strict.status().message();
}

}  // namespace
}  // namespace mt
