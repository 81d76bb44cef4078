#include "tunefleet/common/status.h"

#include <gtest/gtest.h>

namespace tunefleet {
namespace {

Result<int> ParsePositive(int v) {
  if (v <= 0) return InvalidArgument("value must be positive, got " + std::to_string(v));
  return v;
}

Status UsesAssignOrReturn(int v, int& out) {
  TF_ASSIGN_OR_RETURN(out, ParsePositive(v));
  return Status::Ok();
}

TEST(Status, CarriesCodeAndMessage) {
  Status s = InvalidArgument("baseM=48 is not a multiple of 16");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: baseM=48 is not a multiple of 16");
  EXPECT_EQ(s.WithContext("op 3").message(), "op 3: baseM=48 is not a multiple of 16");
}

TEST(Result, HoldsValueOrError) {
  int out = 0;
  EXPECT_TRUE(UsesAssignOrReturn(5, out).ok());
  EXPECT_EQ(out, 5);
  Status s = UsesAssignOrReturn(-1, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("positive"), std::string::npos);
}

}  // namespace
}  // namespace tunefleet
