// The daemon's metrics in the Prometheus text exposition format (version 0.0.4).
// prometheus-cpp is not packaged for Debian 12, so this is a small registry of its own:
// labelled counters, gauges read at scrape time, and histograms.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace airlock::server {

class Metrics {
 public:
  using Labels = std::map<std::string, std::string>;

  void count(const std::string& name, const Labels& labels = {}, double by = 1);
  void observe(const std::string& name, double value, const Labels& labels = {});
  // Declares a metric (its help text and type) before use; gauges read `read` per scrape.
  void describe_counter(const std::string& name, const std::string& help);
  void describe_histogram(const std::string& name, const std::string& help, std::vector<double> buckets);
  void describe_gauge(const std::string& name, const std::string& help, std::function<double()> read);

  std::string exposition() const;

 private:
  struct Histogram {
    std::vector<double> bucket_counts;  // cumulative at scrape time
    double sum = 0;
    double count = 0;
  };
  struct Family {
    std::string help, type;
    std::vector<double> buckets;
    std::function<double()> gauge;
    std::map<Labels, double> counters;
    std::map<Labels, Histogram> histograms;
  };
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace airlock::server
