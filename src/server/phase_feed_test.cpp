#include "server/phase_feed.h"

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cohort::server {
namespace phase_feed_test {

PhaseFrame frame_of_step(int64_t step) {
  PhaseFrame f;
  f.step = step;
  f.phase = "prefill";
  f.slots.resize(2);
  f.slots[0].request = step;
  f.slots[0].activity = SlotActivity::kPrefill;
  return f;
}

TEST(PhaseFeed, WatchedOnlyWhileAWatchLives) {
  PhaseFeed feed;
  EXPECT_FALSE(feed.watched());
  {
    const PhaseFeed::Watch a(feed);
    const PhaseFeed::Watch b(feed);
    EXPECT_TRUE(feed.watched());
  }
  EXPECT_FALSE(feed.watched());
}

TEST(PhaseFeed, ReaderGetsEveryFrameInOrderFromWhereItStarted) {
  PhaseFeed feed;
  feed.publish(frame_of_step(0));
  uint64_t next = feed.next_seq();
  EXPECT_EQ(next, 2u);
  for (int64_t s = 1; s <= 5; ++s) feed.publish(frame_of_step(s));
  std::vector<PhaseFrame> got;
  EXPECT_EQ(feed.read(next, got, std::chrono::milliseconds(0)), 0u);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].step, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(got[i].seq, i + 2);
    EXPECT_EQ(got[i].slots[0].request, static_cast<int64_t>(i) + 1);
  }
  EXPECT_EQ(next, 7u);
}

TEST(PhaseFeed, ReaderTooFarBehindIsToldHowManyFramesItLost) {
  PhaseFeed feed;
  uint64_t next = feed.next_seq();
  const size_t n = PhaseFeed::kRingFrames + 10;
  for (size_t s = 0; s < n; ++s) feed.publish(frame_of_step(static_cast<int64_t>(s)));
  std::vector<PhaseFrame> got;
  EXPECT_EQ(feed.read(next, got, std::chrono::milliseconds(0)), 10u);
  ASSERT_EQ(got.size(), PhaseFeed::kRingFrames);
  EXPECT_EQ(got.front().step, 10);
  EXPECT_EQ(got.back().step, static_cast<int64_t>(n) - 1);
}

TEST(PhaseFeed, ReadWaitsForTheNextFrameOrTimesOut) {
  PhaseFeed feed;
  uint64_t next = feed.next_seq();
  std::vector<PhaseFrame> got;
  EXPECT_EQ(feed.read(next, got, std::chrono::milliseconds(1)), 0u);
  EXPECT_TRUE(got.empty());
  std::thread engine([&] { feed.publish(frame_of_step(7)); });
  while (got.empty()) feed.read(next, got, std::chrono::milliseconds(1000));
  engine.join();
  EXPECT_EQ(got.front().step, 7);
}

TEST(PhaseFeed, FrameJsonCarriesTheSlotsQueueAndEndings) {
  PhaseFrame f = frame_of_step(3);
  f.seq = 9;
  f.slots[0].n_tokens = 32;
  f.slots[1].request = 4;
  f.slots[1].activity = SlotActivity::kReady;
  f.slots[1].ttft_ms = 12.5;
  f.queued = {5, 6};
  f.admitted = {4};
  f.ended = {{2, "stop"}};
  const nlohmann::json j = nlohmann::json::parse(frame_json(f));
  EXPECT_EQ(j["type"], "step");
  EXPECT_EQ(j["seq"], 9);
  EXPECT_EQ(j["step"], 3);
  EXPECT_EQ(j["phase"], "prefill");
  ASSERT_EQ(j["slots"].size(), 2u);
  EXPECT_EQ(j["slots"][0]["state"], "prefill");
  EXPECT_EQ(j["slots"][0]["n"], 32);
  EXPECT_EQ(j["slots"][1]["state"], "ready");
  EXPECT_EQ(j["slots"][1]["id"], 4);
  EXPECT_DOUBLE_EQ(j["slots"][1]["ttft_ms"].get<double>(), 12.5);
  EXPECT_EQ(j["queue"], nlohmann::json::array({5, 6}));
  EXPECT_EQ(j["admitted"], nlohmann::json::array({4}));
  EXPECT_EQ(j["ended"][0]["reason"], "stop");
}

}  // namespace phase_feed_test
}  // namespace cohort::server
