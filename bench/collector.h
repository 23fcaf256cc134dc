// SPDX-License-Identifier: Apache-2.0
// A Google Benchmark reporter that prints as the console reporter does and
// keeps one counter of every run, for the ratio tables and FIGURE lines.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

namespace systole::bench {

class Collector : public benchmark::ConsoleReporter {
 public:
  explicit Collector(std::string counter) : counter_(std::move(counter)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const auto it = run.counters.find(counter_);
      if (it != run.counters.end()) values_[run.benchmark_name()] = it->second;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  // The counter of run `name` ("BM_Eigen/1024/1/real_time"), or 0.
  double operator[](const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? 0.0 : double(it->second);
  }
  const std::map<std::string, double>& values() const { return values_; }
  void set(const std::string& name, double value) { values_[name] = value; }

 private:
  std::string counter_;
  std::map<std::string, double> values_;
};

}  // namespace systole::bench
