// Every transition of every gRPC call state machine, against the diagrams in grpc_call_state.h.
#include "frontends/grpc/grpc_call_state.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace nereid::grpc_frontend {
namespace {

template <typename S, size_t N>
void ExpectExactly(const S (&all)[N], const std::set<std::pair<S, S>>& legal) {
  for (S from : all) {
    for (S to : all) {
      EXPECT_EQ(IsLegalTransition(from, to), legal.count({from, to}) != 0)
          << StateName(from) << " -> " << StateName(to);
      Lifecycle<S> l(from);
      Status s = l.MoveTo(to);
      EXPECT_EQ(s.ok(), legal.count({from, to}) != 0);
      EXPECT_EQ(l.state(), s.ok() ? to : from);  // an illegal move changes nothing
    }
  }
}

TEST(GrpcCallStateTest, UnaryStages) {
  using S = UnaryStage;
  constexpr S kAll[] = {S::kListening, S::kProcessing, S::kFinishing};
  ExpectExactly(kAll, {{S::kListening, S::kProcessing}, {S::kProcessing, S::kFinishing}});
}

TEST(GrpcCallStateTest, StreamReadSide) {
  using S = StreamReadState;
  constexpr S kAll[] = {S::kStarting, S::kReading, S::kHandling, S::kAbandoned, S::kDone};
  ExpectExactly(kAll, {{S::kStarting, S::kReading},
                       {S::kStarting, S::kDone},
                       {S::kStarting, S::kAbandoned},
                       {S::kReading, S::kHandling},
                       {S::kReading, S::kDone},
                       {S::kHandling, S::kReading},
                       {S::kHandling, S::kDone},
                       {S::kHandling, S::kAbandoned}});
  // Which states keep the call alive.
  EXPECT_TRUE(ReadBusy(S::kStarting));
  EXPECT_TRUE(ReadBusy(S::kReading));
  EXPECT_TRUE(ReadBusy(S::kHandling));
  EXPECT_FALSE(ReadBusy(S::kAbandoned));
  EXPECT_FALSE(ReadBusy(S::kDone));
}

TEST(GrpcCallStateTest, StreamWriteSide) {
  using S = StreamWriteState;
  constexpr S kAll[] = {S::kIdle,     S::kWriting, S::kFinishing,
                        S::kFinished, S::kBroken,  S::kBrokenWriting};
  ExpectExactly(kAll, {{S::kIdle, S::kWriting},
                       {S::kIdle, S::kFinishing},
                       {S::kIdle, S::kBroken},
                       {S::kWriting, S::kIdle},
                       {S::kWriting, S::kBroken},
                       {S::kWriting, S::kBrokenWriting},
                       {S::kBrokenWriting, S::kBroken},
                       {S::kFinishing, S::kFinished}});
  EXPECT_FALSE(WriteBusy(S::kIdle));
  EXPECT_TRUE(WriteBusy(S::kWriting));
  EXPECT_TRUE(WriteBusy(S::kBrokenWriting));
  EXPECT_TRUE(WriteBusy(S::kFinishing));
  EXPECT_FALSE(WriteBusy(S::kFinished));
  EXPECT_FALSE(WriteBusy(S::kBroken));
}

TEST(GrpcCallStateTest, IllegalMovesSayWhatAndWhere) {
  Lifecycle<UnaryStage> unary(UnaryStage::kListening);
  EXPECT_EQ(unary.MoveTo(UnaryStage::kFinishing).message(),
            "illegal gRPC call transition LISTENING -> FINISHING");
  Lifecycle<StreamReadState> read(StreamReadState::kDone);
  EXPECT_EQ(read.MoveTo(StreamReadState::kReading).message(),
            "illegal gRPC stream read transition DONE -> READING");
  Lifecycle<StreamWriteState> write(StreamWriteState::kBroken);
  Status s = write.MoveTo(StreamWriteState::kFinishing);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "illegal gRPC stream write transition BROKEN -> FINISHING");
}

}  // namespace
}  // namespace nereid::grpc_frontend
