// SPDX-License-Identifier: Apache-2.0
// The tools' way out for what their own checks did not catch: an exception
// from the standard library or a dependency (std::bad_alloc from a size no
// check bounded, a parser's or stream's exception) ends the tool with the
// same kind of named error and exit code 2 as any bad input, not with
// std::terminate and SIGABRT. Every tool arms the fault points that
// SYSTOLE_FAULTS names (systole/fault_points.h), or exits 2 quoting a
// malformed rule.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "systole/fault_points.h"

namespace systole::tools {

inline int guarded_main(const char* tool, int (*run)(int, char**), int argc, char** argv) {
  if (Status armed = arm_faults_from_environment(); !armed.ok()) {
    std::fprintf(stderr, "%s: %s\n", tool, armed.message().c_str());
    return 2;
  }
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of memory: the input asks for more memory than this machine has\n", tool);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: an unknown exception ended the run\n", tool);
  }
  std::fflush(stdout);
  return 2;
}

}  // namespace systole::tools
