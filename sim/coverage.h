// SPDX-License-Identifier: Apache-2.0
// Writes a Verilated model's coverage (line, branch and toggle points, in a
// model verilated with --coverage) when it goes out of scope, into
// $SYSTOLE_COVERAGE_DIR as <pid>_<n>.dat for scripts/rtl-coverage to merge.
// Without that variable, or in a model without coverage, it does nothing.
//
// The counters live in the model, so the writer must end before the model
// does: declare it after the model (members and locals end in reverse).
#pragma once

#include <verilated.h>

#if VM_COVERAGE
#include <unistd.h>
#include <verilated_cov.h>

#include <atomic>
#include <cstdlib>
#include <string>
#endif

namespace systole::sim {

class CoverageWriter {
 public:
  explicit CoverageWriter(VerilatedContext* context) : context_(context) {}
  CoverageWriter(const CoverageWriter&) = delete;
  CoverageWriter& operator=(const CoverageWriter&) = delete;
  ~CoverageWriter() {
#if VM_COVERAGE
    const char* dir = std::getenv("SYSTOLE_COVERAGE_DIR");
    if (!dir || !*dir) return;
    static std::atomic<unsigned> serial{0};
    const std::string path =
        std::string(dir) + "/" + std::to_string(getpid()) + "_" + std::to_string(serial++) + ".dat";
    context_->coveragep()->write(path.c_str());
#endif
  }

 private:
  [[maybe_unused]] VerilatedContext* context_;
};

}  // namespace systole::sim
