// BatchTrace: the exact JSON line of a plan, and which plans are recorded.
#include "sched/batch_trace.h"

#include <sstream>

#include <gtest/gtest.h>

namespace cohort::sched {
namespace batch_trace_test {

TEST(BatchTrace, FormatsOneLinePerStepWithEveryList) {
  BatchPlan plan;
  plan.step = 12;
  plan.phase = Phase::kPrefill;
  plan.rows = {{0, 3, RowKind::kPrompt, 512, 256, false}, {1, 4, RowKind::kPrompt, 0, 8, true}};
  plan.keep_logits = {{1, 4}};
  plan.admitted = {{1, 4, 32}};
  plan.ended = {{2, 1, EndReason::kStop}};
  SchedulerCounters c;
  c.n_queued = 1;
  c.n_processing = 2;
  c.n_blocked = 1;
  c.cohort_size = 2;
  EXPECT_EQ(format_trace_line(plan, c),
            "{\"step\":12,\"phase\":\"pp\",\"rows\":[{\"slot\":0,\"id\":3,\"kind\":\"pp\",\"n\":256,"
            "\"pos\":512,\"last\":false},{\"slot\":1,\"id\":4,\"kind\":\"pp\",\"n\":8,\"pos\":0,"
            "\"last\":true}],\"first_tokens\":[],\"keep_logits\":[4],\"admitted\":[{\"slot\":1,"
            "\"id\":4,\"cached\":32}],\"ended\":[{\"slot\":2,\"id\":1,\"reason\":\"stop\"}],"
            "\"parked\":[],\"unparked\":[],\"queued\":1,\"processing\":2,\"parked_n\":0,"
            "\"blocked\":1,\"cohort\":2}");
}

TEST(BatchTrace, SkipsIdlePollsAndRecordsBarrierSteps) {
  std::ostringstream out;
  BatchTrace trace(out);
  BatchPlan plan;
  trace.record(plan, {});
  EXPECT_EQ(out.str(), "");
  plan.phase = Phase::kPrefill;
  plan.first_tokens = {{0, 7}, {1, 9}};
  trace.record(plan, {});
  EXPECT_NE(out.str().find("\"first_tokens\":[7,9]"), std::string::npos);
  EXPECT_EQ(out.str().back(), '\n');
}

}  // namespace batch_trace_test
}  // namespace cohort::sched
