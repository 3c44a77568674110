#include "server/http/deferred_body.hpp"

#include <utility>

namespace airlock::server {

HttpResponse DeferredBody::response(const std::shared_ptr<DeferredBody>& body, std::string content_type) {
  HttpResponse resp;
  resp.content_type = std::move(content_type);
  resp.stream = [body](std::shared_ptr<BodyWriter> writer) { body->attach(std::move(writer)); };
  return resp;
}

void DeferredBody::attach(std::shared_ptr<BodyWriter> writer) {
  std::lock_guard lock(mu_);
  writer_ = std::move(writer);
  for (auto& bytes : pending_) writer_->write(std::move(bytes));
  pending_.clear();
  if (end_ == End::finished) writer_->finish();
  if (end_ == End::aborted) writer_->abort();
  attached_.notify_all();
}

bool DeferredBody::write(std::string bytes) {
  std::lock_guard lock(mu_);
  if (end_ != End::none) return false;
  if (!writer_) {
    pending_.push_back(std::move(bytes));
    return true;
  }
  return writer_->write(std::move(bytes));
}

void DeferredBody::finish() {
  std::lock_guard lock(mu_);
  if (end_ != End::none) return;
  end_ = End::finished;
  if (writer_) writer_->finish();
}

void DeferredBody::abort() {
  std::lock_guard lock(mu_);
  if (end_ != End::none) return;
  end_ = End::aborted;
  if (writer_) writer_->abort();
}

bool DeferredBody::wait_below(std::size_t bytes, std::chrono::milliseconds timeout) {
  std::shared_ptr<BodyWriter> writer;
  {
    std::unique_lock lock(mu_);
    attached_.wait_for(lock, timeout, [&] { return writer_ != nullptr; });
    writer = writer_;
  }
  return writer ? writer->wait_below(bytes, timeout) : false;
}

}  // namespace airlock::server
