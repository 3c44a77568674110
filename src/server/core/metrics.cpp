#include "server/core/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <mutex>
#include <utility>

namespace airlock::server {

namespace prom = prometheus;

// prometheus-cpp's families are thread-safe; the maps from our names to them are guarded here.
struct Metrics::Registry {
  prom::Registry registry;
  mutable std::mutex mu;
  std::map<std::string, prom::Family<prom::Counter>*> counters;
  struct HistogramFamily {
    prom::Family<prom::Histogram>* family;
    prom::Histogram::BucketBoundaries buckets;
  };
  std::map<std::string, HistogramFamily> histograms;
  struct ScrapedGauge {
    prom::Gauge* gauge;
    std::function<double()> read;
  };
  std::vector<ScrapedGauge> gauges;

  prom::Family<prom::Counter>& counter(const std::string& name, const std::string& help) {
    auto it = counters.find(name);
    if (it == counters.end())
      it = counters.emplace(name, &prom::BuildCounter().Name(name).Help(help).Register(registry)).first;
    return *it->second;
  }
  HistogramFamily& histogram(const std::string& name, const std::string& help,
                             prom::Histogram::BucketBoundaries buckets) {
    auto it = histograms.find(name);
    if (it == histograms.end()) {
      auto& family = prom::BuildHistogram().Name(name).Help(help).Register(registry);
      it = histograms.emplace(name, HistogramFamily{&family, std::move(buckets)}).first;
    }
    return it->second;
  }
};

Metrics::Metrics() : registry_(std::make_unique<Registry>()) {}
Metrics::~Metrics() = default;

void Metrics::describe_counter(const std::string& name, const std::string& help) {
  std::lock_guard lock(registry_->mu);
  registry_->counter(name, help);
}

void Metrics::describe_histogram(const std::string& name, const std::string& help, std::vector<double> buckets) {
  std::lock_guard lock(registry_->mu);
  registry_->histogram(name, help, std::move(buckets));
}

void Metrics::describe_gauge(const std::string& name, const std::string& help, std::function<double()> read) {
  std::lock_guard lock(registry_->mu);
  auto& family = prom::BuildGauge().Name(name).Help(help).Register(registry_->registry);
  registry_->gauges.push_back({&family.Add({}), std::move(read)});
}

void Metrics::count(const std::string& name, const Labels& labels, double by) {
  prom::Family<prom::Counter>* family;
  {
    std::lock_guard lock(registry_->mu);
    family = &registry_->counter(name, name);
  }
  family->Add(labels).Increment(by);
}

void Metrics::observe(const std::string& name, double value, const Labels& labels) {
  Registry::HistogramFamily* entry;
  {
    std::lock_guard lock(registry_->mu);
    entry = &registry_->histogram(name, name, {});
  }
  entry->family->Add(labels, entry->buckets).Observe(value);
}

std::string Metrics::exposition() const {
  {
    std::lock_guard lock(registry_->mu);
    for (const auto& g : registry_->gauges) g.gauge->Set(g.read ? g.read() : 0);
  }
  return prom::TextSerializer().Serialize(registry_->registry.Collect());
}

}  // namespace airlock::server
