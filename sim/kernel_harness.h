// SPDX-License-Identifier: Apache-2.0
// The co-simulation harness of the Systole kernel: a Verilated kernel with
// the ports Vitis sees (hw/rtl/systole_rtl.sv, so also RTL that Vitis HLS
// generates from hw/hls with the same interface), its AXI4 master ports
// (spec::kPortNames) on HBM models over one device memory, and an AXI4-Lite master for
// its registers. One object, one clock; the hw_emu backend and the RTL
// tests both drive the kernel through it. A failing RTL assertion (models
// verilated with --assert) does not end the process: it prints its
// %Error line and assertion_failed() turns true.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "axi_read_memory.h"
#include "axi_write_memory.h"
#include "coverage.h"
#include "model_context.h"
#include "systole/spec.h"
#include "verilated.h"
#if VM_TRACE_FST
#include "verilated_fst_c.h"
#endif

namespace systole::sim {

template <class Model>
class KernelHarness {
 public:
  // `memory` is the device memory; each port's model gets its own seed.
  // A non-empty `fst_path` records every signal, every half cycle, into an
  // FST waveform there (models verilated with --trace-fst only).
  KernelHarness(uint8_t* memory, uint64_t size, MemoryTiming timing, const std::string& fst_path = "") {
    context_->fatalOnError(false);
    if (!fst_path.empty()) {
#if VM_TRACE_FST
      context_->traceEverOn(true);  // before the model exists
#else
      trace_error_ = "this model was verilated without --trace-fst";
#endif
    }
    k_ = std::make_unique<Model>(context_.get());
#if VM_TRACE_FST
    if (!fst_path.empty()) {
      trace_ = std::make_unique<VerilatedFstC>();
      k_->trace(trace_.get(), 99);
      trace_->open(fst_path.c_str());
      if (!trace_->isOpen()) trace_error_ = "cannot open " + fst_path;
    }
#endif
    Model& k = *k_;
    // In spec::kPortNames order.
    const AxiReadPort reads[] = {
        SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_cmd), SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_a0),
        SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_a1),  SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_a2),
        SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_a3),  SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_b0),
        SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_b1),  SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_c0),
        SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_c1),  SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_c2),
        SYSTOLE_AXI_READ_PORT(k, m_axi_gmem_c3)};
    static_assert(std::size(reads) == spec::kMemoryPorts, "every port of the spec");
    for (const AxiReadPort& port : reads) {
      ++timing.seed;
      reads_.push_back(std::make_unique<AxiReadMemory>(port, memory, size, timing));
    }
    const AxiWritePort writes[] = {
        SYSTOLE_AXI_WRITE_PORT(k, m_axi_gmem_c0), SYSTOLE_AXI_WRITE_PORT(k, m_axi_gmem_c1),
        SYSTOLE_AXI_WRITE_PORT(k, m_axi_gmem_c2), SYSTOLE_AXI_WRITE_PORT(k, m_axi_gmem_c3)};
    static_assert(std::size(writes) == spec::kCPorts, "every c port writes");
    for (const AxiWritePort& port : writes) {
      ++timing.seed;
      writes_.push_back(std::make_unique<AxiWriteMemory>(port, memory, size, timing));
    }
    k.ap_rst_n = 0;
    tick();
    tick();
    k.ap_rst_n = 1;
  }

  KernelHarness(const KernelHarness&) = delete;
  KernelHarness& operator=(const KernelHarness&) = delete;
  ~KernelHarness() { context_.make_current(); }  // the model ends in its context

  Model& kernel() { return *k_; }
  // Port p of spec::kPortNames; write port i is c port i.
  AxiReadMemory& read_port(uint32_t p) { return *reads_[p]; }
  AxiWriteMemory& write_port(uint32_t i) { return *writes_[i]; }

  // Every protocol violation any memory model saw, with its port.
  std::vector<std::string> violations() const {
    std::vector<std::string> all;
    for (uint32_t p = 0; p < reads_.size(); ++p)
      for (const std::string& v : reads_[p]->violations())
        all.push_back(std::string(spec::kPortNames[p]) + ": " + v);
    for (uint32_t i = 0; i < writes_.size(); ++i)
      for (const std::string& v : writes_[i]->violations())
        all.push_back(std::string(spec::kPortNames[spec::kFirstCPort + i]) + " (write): " + v);
    return all;
  }

  void tick() {
    k_->ap_clk = 0;
    k_->eval();
    dump();
    for (auto& port : reads_) port->before_edge();
    for (auto& port : writes_) port->before_edge();
    k_->ap_clk = 1;
    k_->eval();
    dump();
    for (auto& port : reads_) port->after_edge();
    for (auto& port : writes_) port->after_edge();
  }

  // An assertion in the RTL has failed since the harness was made.
  bool assertion_failed() const { return context_->gotError(); }

  // Why the waveform asked for is not being written ("" when it is, or
  // when none was asked for).
  const std::string& trace_error() const { return trace_error_; }

  // AXI4-Lite write and read; false / 0xDEADBEEF if the slave never answers.
  bool write(uint32_t address, uint32_t data) {
    Model& k = *k_;
    k.s_axi_control_AWADDR = address;
    k.s_axi_control_WDATA = data;
    k.s_axi_control_WSTRB = 0xF;
    k.s_axi_control_AWVALID = k.s_axi_control_WVALID = 1;
    k.s_axi_control_BREADY = 1;
    for (int cycle = 0; cycle < 1000; ++cycle) {
      k.ap_clk = 0;
      k.eval();
      const bool aw = k.s_axi_control_AWREADY, w = k.s_axi_control_WREADY,
                 b = k.s_axi_control_BVALID && !k.s_axi_control_AWVALID && !k.s_axi_control_WVALID;
      tick();
      if (aw) k.s_axi_control_AWVALID = 0;
      if (w) k.s_axi_control_WVALID = 0;
      if (b) {
        k.s_axi_control_BREADY = 0;
        return true;
      }
    }
    return false;
  }

  uint32_t read(uint32_t address) {
    Model& k = *k_;
    k.s_axi_control_ARADDR = address;
    k.s_axi_control_ARVALID = 1;
    k.s_axi_control_RREADY = 0;
    for (int cycle = 0; cycle < 1000; ++cycle) {
      k.ap_clk = 0;
      k.eval();
      const bool taken = k.s_axi_control_ARREADY;
      tick();
      if (taken) k.s_axi_control_ARVALID = 0;
      if (k.s_axi_control_RVALID) {
        const uint32_t data = k.s_axi_control_RDATA;
        k.s_axi_control_RREADY = 1;
        tick();
        k.s_axi_control_RREADY = 0;
        return data;
      }
    }
    return 0xDEADBEEF;
  }

  // Runs the clock until the kernel raises its interrupt (GIE and IER must
  // be set) or `max_cycles` pass; acknowledges the interrupt.
  bool run_until_interrupt(uint64_t max_cycles) {
    for (uint64_t cycle = 0; cycle < max_cycles; ++cycle) {
      // Verilator renames the port `interrupt` (a reserved word of its
      // runtime) to __SYM__interrupt.
      if (k_->__SYM__interrupt) return write(spec::reg::kIpIntStatus, 1);  // toggles the done bit off
      tick();
    }
    return false;
  }

 private:
  void dump() {
#if VM_TRACE_FST
    if (trace_) trace_->dump(time_);
#endif
    ++time_;
  }

  ModelContext context_;  // before the model: outlives it
  std::unique_ptr<Model> k_;
  CoverageWriter coverage_{context_.get()};  // after the model: ends first
#if VM_TRACE_FST
  std::unique_ptr<VerilatedFstC> trace_;  // after k_: closed before the model goes
#endif
  std::string trace_error_;
  uint64_t time_ = 0;  // half cycles
  std::vector<std::unique_ptr<AxiReadMemory>> reads_;
  std::vector<std::unique_ptr<AxiWriteMemory>> writes_;
};

}  // namespace systole::sim
