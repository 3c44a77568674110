// A forward listener's connections: no request to read, one fixed target, no answer to write.
#include "egress/session.hpp"

namespace airlock::egress {
namespace {

class ForwardSession final : public Protocol {
 public:
  ForwardSession(Session& session, PortForward forward)
      : session_(session), forward_(std::move(forward)) {}

  void start() override {
    session_.record().host = forward_.host;
    session_.record().port = forward_.port;
    session_.decided(session_.policy().decide_forward(forward_), forward_.port);
  }

  // The client learns of a refusal only by the connection closing.
  void refuse(Refusal, const std::string&) override { session_.finish(); }

  void upstream_connected() override { session_.relay(); }

 private:
  Session& session_;
  PortForward forward_;
};

}  // namespace

std::unique_ptr<Protocol> make_forward_protocol(Session& session, PortForward forward) {
  return std::make_unique<ForwardSession>(session, std::move(forward));
}

}  // namespace airlock::egress
