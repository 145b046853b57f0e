// Completion queues, shared receive queues and the async event queue.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "nic/async_event.h"
#include "nic/completion_queue.h"
#include "nic/pd_table.h"
#include "nic/recv_queue.h"
#include "nic/shared_receive_queue.h"

namespace rocemu::nic {
namespace {

constexpr ClientId kClient = 3;

WorkCompletion Wc(uint64_t id, WcStatus st = WcStatus::kSuccess) {
  WorkCompletion wc;
  wc.wr_id = id;
  wc.status = st;
  return wc;
}

TEST(CompletionQueue, FifoPollInBatches) {
  AsyncEventQueue ev;
  CqTable cqs(8, 64, &ev);
  CqHandle h = *cqs.Create(kClient, 4);
  CompletionQueue* cq = cqs.Get(h);
  ASSERT_NE(cq, nullptr);
  std::array<WorkCompletion, 3> out;
  for (uint64_t round = 0; round < 3; ++round) {  // wraps the ring
    for (uint64_t i = 0; i < 4; ++i) {
      ASSERT_EQ(cq->Push(Wc(round * 10 + i)), CqPushResult::kOk);
    }
    ASSERT_EQ(cq->Poll(out), 3u);
    EXPECT_EQ(out[0].wr_id, round * 10);
    EXPECT_EQ(out[2].wr_id, round * 10 + 2);
    ASSERT_EQ(cq->Poll(out), 1u);
    EXPECT_EQ(out[0].wr_id, round * 10 + 3);
    EXPECT_EQ(cq->Poll(out), 0u);
  }
  EXPECT_TRUE(ev.empty());
}

TEST(CompletionQueue, OverflowMovesToErrorAndRaisesEvent) {
  AsyncEventQueue ev;
  CqTable cqs(8, 64, &ev);
  CqHandle h = *cqs.Create(kClient, 2);
  CompletionQueue* cq = cqs.Get(h);
  ASSERT_EQ(cq->Push(Wc(1)), CqPushResult::kOk);
  ASSERT_EQ(cq->Push(Wc(2)), CqPushResult::kOk);
  EXPECT_FALSE(cq->in_error());
  EXPECT_EQ(cq->Push(Wc(3)), CqPushResult::kOverflow);
  EXPECT_TRUE(cq->in_error());
  EXPECT_EQ(cq->Push(Wc(4)), CqPushResult::kInError);
  EXPECT_EQ(cq->overflows(), 1u);
  // Exactly one CQ_ERR, naming this CQ and its owner.
  AsyncEvent e;
  ASSERT_TRUE(ev.Pop(&e));
  EXPECT_EQ(e.type, AsyncEventType::kCqErr);
  EXPECT_EQ(e.element, h);
  EXPECT_EQ(e.client, kClient);
  EXPECT_FALSE(ev.Pop(&e));
  // What was queued before the overflow is still delivered.
  std::array<WorkCompletion, 4> out;
  ASSERT_EQ(cq->Poll(out), 2u);
  EXPECT_EQ(out[0].wr_id, 1u);
  EXPECT_EQ(out[1].wr_id, 2u);
}

struct NotifyLog {
  std::vector<CqHandle> fired;
  static void Fn(void* ctx, CqHandle cq) {
    static_cast<NotifyLog*>(ctx)->fired.push_back(cq);
  }
};

TEST(CompletionQueue, NotifyNextFiresOnce) {
  CqTable cqs(8, 64, nullptr);
  CqHandle h = *cqs.Create(kClient, 16);
  CompletionQueue* cq = cqs.Get(h);
  NotifyLog log;
  cq->SetNotifyHook(&NotifyLog::Fn, &log);
  cq->Push(Wc(1));
  EXPECT_TRUE(log.fired.empty());  // not armed
  cq->RequestNotify(false);
  EXPECT_TRUE(cq->armed());
  cq->Push(Wc(2));
  cq->Push(Wc(3));
  ASSERT_EQ(log.fired.size(), 1u);  // one event per arm
  EXPECT_EQ(log.fired[0], h);
  EXPECT_FALSE(cq->armed());
}

TEST(CompletionQueue, NotifySolicitedOnlyOnSolicitedOrError) {
  CqTable cqs(8, 64, nullptr);
  CompletionQueue* cq = cqs.Get(*cqs.Create(kClient, 16));
  NotifyLog log;
  cq->SetNotifyHook(&NotifyLog::Fn, &log);
  cq->RequestNotify(true);
  cq->Push(Wc(1), /*solicited=*/false);
  EXPECT_TRUE(log.fired.empty());
  cq->Push(Wc(2), /*solicited=*/true);
  EXPECT_EQ(log.fired.size(), 1u);
  cq->RequestNotify(true);
  cq->Push(Wc(3, WcStatus::kRemAccessErr), false);  // errors count too
  EXPECT_EQ(log.fired.size(), 2u);
  // A "next" arm is not weakened to solicited-only.
  cq->RequestNotify(false);
  cq->RequestNotify(true);
  cq->Push(Wc(4), false);
  EXPECT_EQ(log.fired.size(), 3u);
}

TEST(CompletionQueue, CreateResizeDestroy) {
  CqTable cqs(2, 64, nullptr);
  EXPECT_EQ(cqs.Create(kClient, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cqs.Create(kClient, 65).status().code(),
            absl::StatusCode::kInvalidArgument);
  CqHandle h = *cqs.Create(kClient, 4);
  ASSERT_TRUE(cqs.Create(kClient, 4).ok());
  EXPECT_EQ(cqs.Create(kClient, 4).status().code(),
            absl::StatusCode::kResourceExhausted);
  CompletionQueue* cq = cqs.Get(h);
  for (int i = 0; i < 4; ++i) cq->Push(Wc(i));
  std::array<WorkCompletion, 1> one;
  cq->Poll(one);  // head moves so resize must unwrap the ring
  cq->Push(Wc(4));
  EXPECT_FALSE(cq->Resize(3).ok());
  ASSERT_TRUE(cq->Resize(8).ok());
  EXPECT_EQ(cq->capacity(), 8u);
  std::array<WorkCompletion, 8> out;
  ASSERT_EQ(cq->Poll(out), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i].wr_id, uint64_t(i + 1));
  cq->Retain();  // a QP uses it
  EXPECT_EQ(cqs.Destroy(kClient, h).code(),
            absl::StatusCode::kFailedPrecondition);
  cq->Release();
  EXPECT_EQ(cqs.Destroy(kClient + 1, h).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(cqs.Destroy(kClient, h).ok());
  EXPECT_EQ(cqs.Get(h), nullptr);
}

// The daemon drains CQs in the order they began holding completions: the
// order of pending_since() over a table.
TEST(CompletionQueue, PendingSinceOrdersCqsByTheirOldestCompletion) {
  CqTable cqs(4, 8, nullptr);
  CompletionQueue* send = cqs.Get(*cqs.Create(kClient, 4));
  CompletionQueue* recv = cqs.Get(*cqs.Create(kClient, 4));
  recv->Push(Wc(1));
  send->Push(Wc(2));
  recv->Push(Wc(3));  // no longer empty: keeps its place
  EXPECT_LT(recv->pending_since(), send->pending_since());
  std::array<WorkCompletion, 4> out;
  ASSERT_EQ(recv->Poll(out), 2u);
  recv->Push(Wc(4));  // empty again, then a newer completion than send's
  EXPECT_LT(send->pending_since(), recv->pending_since());
  ASSERT_EQ(send->Poll(std::span(out).first(1)), 1u);  // one left of one
  send->Push(Wc(5));
  EXPECT_GT(send->pending_since(), recv->pending_since());
}

RecvWr Rwr(uint64_t id, uint32_t nsge = 1) {
  RecvWr wr;
  wr.wr_id = id;
  for (uint32_t i = 0; i < nsge; ++i) wr.sg_list.PushBack({0x1000, 64, 0x100});
  return wr;
}

TEST(RecvQueue, PostPopFlushResize) {
  RecvQueue q(3, 2);
  EXPECT_EQ(q.Post(Rwr(1, 3)), PostResult::kTooManySge);
  EXPECT_EQ(q.Post(Rwr(1)), PostResult::kOk);
  EXPECT_EQ(q.Post(Rwr(2, 2)), PostResult::kOk);
  EXPECT_EQ(q.Post(Rwr(3)), PostResult::kOk);
  EXPECT_EQ(q.Post(Rwr(4)), PostResult::kFull);
  ASSERT_NE(q.Front(), nullptr);
  EXPECT_EQ(q.Front()->wr_id, 1u);
  q.Pop();
  EXPECT_EQ(q.Post(Rwr(4)), PostResult::kOk);  // wraps
  ASSERT_TRUE(q.Resize(5).ok());
  EXPECT_FALSE(q.Resize(2).ok());
  EXPECT_EQ(q.Post(Rwr(5)), PostResult::kOk);
  std::vector<uint64_t> flushed;
  q.Flush([&](const PostedRecvWr& wr) { flushed.push_back(wr.wr_id); });
  EXPECT_EQ(flushed, (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.Front(), nullptr);
}

// The queue keeps its own copy of each WR's entries (the posting WR is
// gone by the time a message consumes it), across wrap-around and Resize.
TEST(RecvQueue, KeepsEntriesAcrossWrapAndResize) {
  RecvQueue q(2, 3);
  auto post = [&](uint64_t id, uint32_t nsge) {
    RecvWr wr;
    wr.wr_id = id;
    for (uint32_t i = 0; i < nsge; ++i) {
      wr.sg_list.PushBack({id * 0x1000 + i, static_cast<uint32_t>(id + i), 7});
    }
    return q.Post(wr);
  };
  auto check = [&](uint64_t id, uint32_t nsge) {
    const PostedRecvWr* f = q.Front();
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->wr_id, id);
    ASSERT_EQ(f->sg_list.size(), nsge);
    for (uint32_t i = 0; i < nsge; ++i) {
      EXPECT_EQ(f->sg_list[i].addr, id * 0x1000 + i);
      EXPECT_EQ(f->sg_list[i].length, id + i);
    }
    q.Pop();
  };
  ASSERT_EQ(post(1, 3), PostResult::kOk);
  ASSERT_EQ(post(2, 1), PostResult::kOk);
  check(1, 3);
  ASSERT_EQ(post(3, 2), PostResult::kOk);  // into slot 0 again
  ASSERT_TRUE(q.Resize(4).ok());
  ASSERT_EQ(post(4, 3), PostResult::kOk);
  check(2, 1);
  check(3, 2);
  check(4, 3);
  EXPECT_TRUE(q.empty());
}

class SrqTest : public ::testing::Test {
 protected:
  SrqTest() : pds_(4), srqs_(pds_, 4, 128, 4, &ev_) {
    pd_ = *pds_.Alloc(kClient);
  }
  AsyncEventQueue ev_;
  PdTable pds_;
  SrqTable srqs_;
  PdHandle pd_;
};

TEST_F(SrqTest, LimitEventWhenCountDropsBelowLimit) {
  SrqHandle h = *srqs_.Create(kClient, pd_, {.max_wr = 8, .max_sge = 2});
  SharedReceiveQueue* srq = srqs_.Get(h);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(srq->Post(Rwr(i)), PostResult::kOk);
  ASSERT_TRUE(srq->Modify({.srq_limit = 3}, srq_attr_mask::kLimit).ok());
  EXPECT_EQ(srq->Query().srq_limit, 3u);
  srq->Pop();  // 4 left
  srq->Pop();  // 3 left: not below the limit yet
  EXPECT_TRUE(ev_.empty());
  srq->Pop();  // 2 left: below
  AsyncEvent e;
  ASSERT_TRUE(ev_.Pop(&e));
  EXPECT_EQ(e.type, AsyncEventType::kSrqLimitReached);
  EXPECT_EQ(e.element, h);
  EXPECT_EQ(e.client, kClient);
  // Disarmed: no repeat until re-armed.
  EXPECT_EQ(srq->Query().srq_limit, 0u);
  srq->Pop();
  EXPECT_TRUE(ev_.empty());
  ASSERT_TRUE(srq->Modify({.srq_limit = 2}, srq_attr_mask::kLimit).ok());
  srq->Pop();  // 0 left
  ASSERT_TRUE(ev_.Pop(&e));
  EXPECT_EQ(e.type, AsyncEventType::kSrqLimitReached);
}

TEST_F(SrqTest, CreateAndModifyChecks) {
  EXPECT_EQ(
      srqs_.Create(kClient, pd_, {.max_wr = 0, .max_sge = 1}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      srqs_.Create(kClient, pd_, {.max_wr = 129, .max_sge = 1}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      srqs_.Create(kClient, pd_, {.max_wr = 8, .max_sge = 5}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      srqs_.Create(kClient, pd_, {.max_wr = 8, .max_sge = 1, .srq_limit = 9})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(srqs_.Create(kClient + 1, pd_, {.max_wr = 8, .max_sge = 1})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  SrqHandle h = *srqs_.Create(kClient, pd_, {.max_wr = 2, .max_sge = 1});
  SharedReceiveQueue* srq = srqs_.Get(h);
  EXPECT_EQ(srq->Post(Rwr(1, 2)), PostResult::kTooManySge);
  EXPECT_EQ(srq->Post(Rwr(1)), PostResult::kOk);
  EXPECT_EQ(srq->Post(Rwr(2)), PostResult::kOk);
  EXPECT_EQ(srq->Post(Rwr(3)), PostResult::kFull);
  EXPECT_FALSE(srq->Modify({.srq_limit = 3}, srq_attr_mask::kLimit).ok());
  EXPECT_FALSE(srq->Modify({}, 0).ok());
  EXPECT_FALSE(srq->Modify({.max_wr = 1}, srq_attr_mask::kMaxWr).ok());
  ASSERT_TRUE(srq->Modify({.max_wr = 4}, srq_attr_mask::kMaxWr).ok());
  EXPECT_EQ(srq->Query().max_wr, 4u);
  EXPECT_EQ(srq->Post(Rwr(3)), PostResult::kOk);
  EXPECT_EQ(srq->Front()->wr_id, 1u);
  // PD is held; the SRQ is held by QPs.
  EXPECT_EQ(pds_.Dealloc(kClient, pd_).code(),
            absl::StatusCode::kFailedPrecondition);
  srq->Retain();
  EXPECT_EQ(srqs_.Destroy(kClient, h).code(),
            absl::StatusCode::kFailedPrecondition);
  srq->Release();
  srq->SetError();
  EXPECT_EQ(srq->Post(Rwr(9)), PostResult::kInError);
  AsyncEvent e;
  ASSERT_TRUE(ev_.Pop(&e));
  EXPECT_EQ(e.type, AsyncEventType::kSrqErr);
  ASSERT_TRUE(srqs_.Destroy(kClient, h).ok());
  EXPECT_TRUE(pds_.Dealloc(kClient, pd_).ok());
}

TEST(AsyncEventQueue, BoundedWithDropCountAndHook) {
  AsyncEventQueue q(2);
  int woken = 0;
  q.SetNotifyHook([](void* ctx) { ++*static_cast<int*>(ctx); }, &woken);
  EXPECT_TRUE(q.Push({AsyncEventType::kPortActive, 1, 0}));
  EXPECT_TRUE(q.Push({AsyncEventType::kQpFatal, 0x11, 4}));
  EXPECT_FALSE(q.Push({AsyncEventType::kCommEst, 0x12, 4}));
  EXPECT_EQ(q.dropped(), 1u);
  EXPECT_EQ(woken, 2);
  AsyncEvent e;
  ASSERT_TRUE(q.Pop(&e));
  EXPECT_EQ(e.type, AsyncEventType::kPortActive);
  ASSERT_TRUE(q.Pop(&e));
  EXPECT_EQ(e.element, 0x11u);
  EXPECT_FALSE(q.Pop(&e));
  EXPECT_EQ(std::string(AsyncEventName(AsyncEventType::kSrqLimitReached)),
            "IBV_EVENT_SRQ_LIMIT_REACHED");
  EXPECT_EQ(static_cast<int>(AsyncEventType::kQpLastWqeReached), 16);
}

}  // namespace
}  // namespace rocemu::nic
