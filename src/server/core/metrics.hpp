// The daemon's metrics, kept in a prometheus-cpp registry and served in the Prometheus text
// exposition format: labelled counters, gauges read at scrape time, and histograms.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace airlock::server {

class Metrics {
 public:
  using Labels = std::map<std::string, std::string>;

  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  void count(const std::string& name, const Labels& labels = {}, double by = 1);
  void observe(const std::string& name, double value, const Labels& labels = {});
  // Declares a metric (its help text and type) before use; gauges read `read` per scrape.
  // count() or observe() of a name never declared declares it with the name as its help.
  void describe_counter(const std::string& name, const std::string& help);
  void describe_histogram(const std::string& name, const std::string& help, std::vector<double> buckets);
  void describe_gauge(const std::string& name, const std::string& help, std::function<double()> read);

  std::string exposition() const;

 private:
  struct Registry;
  std::unique_ptr<Registry> registry_;
};

}  // namespace airlock::server
