#include "server/metrics.hpp"

#include <cmath>
#include <sstream>

namespace airlock::server {
namespace {

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_labels(const Metrics::Labels& labels, const std::string& extra = {}) {
  if (labels.empty() && extra.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    out += (first ? "" : ",") + k + "=\"" + escape_label(v) + "\"";
    first = false;
  }
  if (!extra.empty()) out += (first ? "" : ",") + extra;
  return out + "}";
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace

void Metrics::describe_counter(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  families_[name].help = help;
  families_[name].type = "counter";
}

void Metrics::describe_histogram(const std::string& name, const std::string& help, std::vector<double> buckets) {
  std::lock_guard lock(mu_);
  auto& f = families_[name];
  f.help = help;
  f.type = "histogram";
  f.buckets = std::move(buckets);
}

void Metrics::describe_gauge(const std::string& name, const std::string& help, std::function<double()> read) {
  std::lock_guard lock(mu_);
  auto& f = families_[name];
  f.help = help;
  f.type = "gauge";
  f.gauge = std::move(read);
}

void Metrics::count(const std::string& name, const Labels& labels, double by) {
  std::lock_guard lock(mu_);
  families_[name].counters[labels] += by;
}

void Metrics::observe(const std::string& name, double value, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& f = families_[name];
  auto& h = f.histograms[labels];
  if (h.bucket_counts.empty()) h.bucket_counts.assign(f.buckets.size(), 0);
  for (std::size_t i = 0; i < f.buckets.size(); ++i)
    if (value <= f.buckets[i]) h.bucket_counts[i] += 1;
  h.sum += value;
  h.count += 1;
}

std::string Metrics::exposition() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + f.type + "\n";
    if (f.type == "gauge") {
      out += name + " " + number(f.gauge ? f.gauge() : 0) + "\n";
    } else if (f.type == "counter") {
      for (const auto& [labels, v] : f.counters) out += name + format_labels(labels) + " " + number(v) + "\n";
    } else {
      for (const auto& [labels, h] : f.histograms) {
        for (std::size_t i = 0; i < f.buckets.size(); ++i)
          out += name + "_bucket" + format_labels(labels, "le=\"" + number(f.buckets[i]) + "\"") + " " +
                 number(h.bucket_counts[i]) + "\n";
        out += name + "_bucket" + format_labels(labels, "le=\"+Inf\"") + " " + number(h.count) + "\n";
        out += name + "_sum" + format_labels(labels) + " " + number(h.sum) + "\n";
        out += name + "_count" + format_labels(labels) + " " + number(h.count) + "\n";
      }
    }
  }
  return out;
}

}  // namespace airlock::server
