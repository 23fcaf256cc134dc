// SPDX-License-Identifier: Apache-2.0
// The VerilatedContext of one model, owned so that the model can be
// destroyed safely while other models live.
//
// Verilator 5.006 erases a model's scopes (models verilated with --assert
// have them) from the destroying thread's current context,
// Verilated::threadContextp(): the context last constructed or evaluated on
// that thread, not necessarily the model's own. And a destroyed context
// stays current. So destroying a model after another model's context has
// gone locks a freed mutex and hangs. Hence: call make_current() first in
// the owner's destructor, and declare this before the model (members end in
// reverse), so that the model ends with its own context current and this
// leaves the default context current, not a destroyed one.
#pragma once

#include <verilated.h>

#include <memory>

namespace systole::sim {

class ModelContext {
 public:
  ModelContext() : context_(std::make_unique<VerilatedContext>()) {}
  ModelContext(const ModelContext&) = delete;
  ModelContext& operator=(const ModelContext&) = delete;
  ~ModelContext() { Verilated::threadContextp(Verilated::defaultContextp()); }

  VerilatedContext* get() const { return context_.get(); }
  VerilatedContext* operator->() const { return context_.get(); }
  void make_current() const { Verilated::threadContextp(context_.get()); }

 private:
  std::unique_ptr<VerilatedContext> context_;
};

}  // namespace systole::sim
