#include "server/mcp_server/mcp_sse.hpp"

namespace airlock::server {

std::string McpEventStream::event(const nlohmann::json& message) {
  return "event: message\ndata: " + message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

std::function<void(HttpResponse)> McpEventStream::start_locked() {
  if (started_) return nullptr;
  started_ = true;
  return std::move(reply_);
}

void McpEventStream::send_start(std::function<void(HttpResponse)> reply) {
  if (!reply) return;
  HttpResponse resp;
  resp.content_type = "text/event-stream";
  resp.headers.emplace_back("Cache-Control", "no-cache");
  resp.stream = [self = shared_from_this()](std::shared_ptr<BodyWriter> writer) { self->attach(std::move(writer)); };
  reply(std::move(resp));
}

void McpEventStream::notify(const nlohmann::json& notification) {
  std::function<void(HttpResponse)> reply;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    if (notification.is_null()) {
      if (writer_) writer_->write(": keep-alive\n\n");
      return;
    }
    if (writer_) {
      writer_->write(event(notification));
      return;
    }
    pending_.push_back(event(notification));
    reply = start_locked();
  }
  send_start(std::move(reply));
}

void McpEventStream::open() {
  std::function<void(HttpResponse)> reply;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    reply = start_locked();
  }
  send_start(std::move(reply));
}

// Writes happen under the lock, so events keep their order whichever thread sends them
// (BodyWriter::write only queues).
void McpEventStream::attach(std::shared_ptr<BodyWriter> writer) {
  {
    std::lock_guard lock(mu_);
    writer_ = writer;
    for (auto& e : pending_) writer->write(std::move(e));
    pending_.clear();
    if (finished_) return writer->finish();
  }
  writer->on_client_gone([self = shared_from_this()] {
    std::function<void()> gone;
    {
      std::lock_guard lock(self->mu_);
      if (self->finished_) return;
      gone = self->gone_;
    }
    if (gone) gone();
  });
}

void McpEventStream::finish(const nlohmann::json& message, HttpResponse plain) {
  std::function<void(HttpResponse)> reply;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    if (started_) {
      if (!writer_) return pending_.push_back(event(message));  // attach() sends it and finishes
      writer_->write(event(message));
      return writer_->finish();
    }
    reply = std::move(reply_);
  }
  reply(std::move(plain));
}

void McpEventStream::close() {
  std::lock_guard lock(mu_);
  if (finished_ || !started_) return;
  finished_ = true;
  if (writer_) writer_->finish();  // else attach() finishes it
}

}  // namespace airlock::server
