// The event-stream reader of the MCP bridge (src/cli/sse_reader.hpp): events split across
// reads, the line endings the standard allows, comments, ids, and the size bound.
#include "cli/sse_reader.hpp"

#include <gtest/gtest.h>

namespace airlock::cli {
namespace {

std::vector<SseEvent> feed_all(SseReader& r, std::initializer_list<std::string_view> pieces) {
  std::vector<SseEvent> all;
  for (auto piece : pieces) {
    auto events = r.feed(piece);
    EXPECT_TRUE(events) << (events ? "" : events.error().message);
    if (events) all.insert(all.end(), events->begin(), events->end());
  }
  return all;
}

TEST(SseReader, EventsCutAnywhereComeOutWhole) {
  const std::string stream = "event: message\ndata: {\"a\":1}\n\ndata: {\"b\":\ndata: 2}\n\n";
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    SseReader reader;
    auto events = feed_all(reader, {std::string_view(stream).substr(0, cut), std::string_view(stream).substr(cut)});
    ASSERT_EQ(events.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(events[0].data, "{\"a\":1}");
    EXPECT_EQ(events[0].type, "message");
    EXPECT_EQ(events[1].data, "{\"b\":\n2}");  // data lines joined with a line feed
    EXPECT_EQ(events[1].type, "");
  }
}

TEST(SseReader, CrLfAndCrEndLinesAsLfDoes) {
  SseReader r;
  auto events = feed_all(r, {"data: one\r", "\n\r", "\ndata: two\r\rdata:three\n\n"});
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].data, "one");
  EXPECT_EQ(events[1].data, "two");
  EXPECT_EQ(events[2].data, "three");  // no space after the colon: the value as it is
}

TEST(SseReader, CommentsAndEventsWithoutDataGoNowhere) {
  SseReader r;
  auto events = feed_all(r, {": keep-alive\n\nevent: ping\n\nretry: 10\nunknown: x\n\n"});
  EXPECT_TRUE(events.empty());
}

TEST(SseReader, TheLastIdIsKeptForReconnecting) {
  SseReader r;
  auto events = feed_all(r, {"id: 7\ndata: a\n\ndata: b\n\nid: 9\n\n"});
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].id, "7");
  EXPECT_EQ(events[1].id, "7");  // an event without an id keeps the last one
  EXPECT_EQ(r.last_event_id(), "9");
}

TEST(SseReader, AnEventOverTheLimitIsRefused) {
  SseReader r(64);
  auto events = r.feed("data: " + std::string(100, 'x'));
  ASSERT_FALSE(events);
  EXPECT_EQ(events.error().code, "sse");
  EXPECT_NE(events.error().message.find("64 bytes"), std::string::npos);
  SseReader joined(64);  // also when it is many lines, none of them long
  Result<std::vector<SseEvent>> last = std::vector<SseEvent>{};
  for (int i = 0; i < 20 && last; ++i) last = joined.feed("data: xxxxxx\n");
  EXPECT_FALSE(last);
}

}  // namespace
}  // namespace airlock::cli
