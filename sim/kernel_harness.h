// SPDX-License-Identifier: Apache-2.0
// The co-simulation harness of the Systole kernel: a Verilated kernel (any
// model with the ports of hw/rtl/systole_kernel.sv, so also RTL that Vitis
// HLS generates from hw/hls with the same interface), its four AXI4 master
// ports on HBM models over one device memory, and an AXI4-Lite master for
// its registers. One object, one clock; the hw_emu backend and the RTL
// tests both drive the kernel through it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "axi_read_memory.h"
#include "axi_write_memory.h"
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
  KernelHarness(uint8_t* memory, uint64_t size, MemoryTiming timing, const std::string& fst_path = "")
      : context_(std::make_unique<VerilatedContext>()) {
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
    const AxiReadPort ports[] = {
        {&k.m_cmd_arvalid, &k.m_cmd_arready, &k.m_cmd_araddr, &k.m_cmd_arlen, &k.m_cmd_arsize,
         &k.m_cmd_arburst, &k.m_cmd_rvalid, &k.m_cmd_rready, &k.m_cmd_rdata[0], &k.m_cmd_rresp,
         &k.m_cmd_rlast},
        {&k.m_a_arvalid, &k.m_a_arready, &k.m_a_araddr, &k.m_a_arlen, &k.m_a_arsize, &k.m_a_arburst,
         &k.m_a_rvalid, &k.m_a_rready, &k.m_a_rdata[0], &k.m_a_rresp, &k.m_a_rlast},
        {&k.m_b_arvalid, &k.m_b_arready, &k.m_b_araddr, &k.m_b_arlen, &k.m_b_arsize, &k.m_b_arburst,
         &k.m_b_rvalid, &k.m_b_rready, &k.m_b_rdata[0], &k.m_b_rresp, &k.m_b_rlast},
        {&k.m_c_arvalid, &k.m_c_arready, &k.m_c_araddr, &k.m_c_arlen, &k.m_c_arsize, &k.m_c_arburst,
         &k.m_c_rvalid, &k.m_c_rready, &k.m_c_rdata[0], &k.m_c_rresp, &k.m_c_rlast}};
    for (const AxiReadPort& port : ports) {
      ++timing.seed;
      reads_.push_back(std::make_unique<AxiReadMemory>(port, memory, size, timing));
    }
    ++timing.seed;
    write_ = std::make_unique<AxiWriteMemory>(
        AxiWritePort{&k.m_c_awvalid, &k.m_c_awready, &k.m_c_awaddr, &k.m_c_awlen, &k.m_c_awsize,
                     &k.m_c_awburst, &k.m_c_wvalid, &k.m_c_wready, &k.m_c_wdata[0], &k.m_c_wstrb,
                     &k.m_c_wlast, &k.m_c_bvalid, &k.m_c_bready, &k.m_c_bresp},
        memory, size, timing);
    k.rst_ni = 0;
    tick();
    tick();
    k.rst_ni = 1;
  }

  Model& kernel() { return *k_; }
  AxiReadMemory& read_port(int index) { return *reads_[index]; }  // 0 cmd, 1 a, 2 b, 3 c
  AxiWriteMemory& write_port() { return *write_; }                // c

  // Every protocol violation any memory model saw, with its port.
  std::vector<std::string> violations() const {
    static const char* const kNames[] = {"cmd", "a", "b", "c"};
    std::vector<std::string> all;
    for (int p = 0; p < 4; ++p)
      for (const std::string& v : reads_[p]->violations()) all.push_back(std::string(kNames[p]) + ": " + v);
    for (const std::string& v : write_->violations()) all.push_back("c (write): " + v);
    return all;
  }

  void tick() {
    k_->clk_i = 0;
    k_->eval();
    dump();
    for (auto& port : reads_) port->before_edge();
    write_->before_edge();
    k_->clk_i = 1;
    k_->eval();
    dump();
    for (auto& port : reads_) port->after_edge();
    write_->after_edge();
  }

  // Why the waveform asked for is not being written ("" when it is, or
  // when none was asked for).
  const std::string& trace_error() const { return trace_error_; }

  // AXI4-Lite write and read; false / 0xDEADBEEF if the slave never answers.
  bool write(uint32_t address, uint32_t data) {
    Model& k = *k_;
    k.s_awaddr = address;
    k.s_wdata = data;
    k.s_wstrb = 0xF;
    k.s_awvalid = k.s_wvalid = 1;
    k.s_bready = 1;
    for (int cycle = 0; cycle < 1000; ++cycle) {
      k.clk_i = 0;
      k.eval();
      const bool aw = k.s_awready, w = k.s_wready, b = k.s_bvalid && !k.s_awvalid && !k.s_wvalid;
      tick();
      if (aw) k.s_awvalid = 0;
      if (w) k.s_wvalid = 0;
      if (b) {
        k.s_bready = 0;
        return true;
      }
    }
    return false;
  }

  uint32_t read(uint32_t address) {
    Model& k = *k_;
    k.s_araddr = address;
    k.s_arvalid = 1;
    k.s_rready = 0;
    for (int cycle = 0; cycle < 1000; ++cycle) {
      k.clk_i = 0;
      k.eval();
      const bool taken = k.s_arready;
      tick();
      if (taken) k.s_arvalid = 0;
      if (k.s_rvalid) {
        const uint32_t data = k.s_rdata;
        k.s_rready = 1;
        tick();
        k.s_rready = 0;
        return data;
      }
    }
    return 0xDEADBEEF;
  }

  // Runs the clock until the kernel raises its interrupt (GIE and IER must
  // be set) or `max_cycles` pass; acknowledges the interrupt.
  bool run_until_interrupt(uint64_t max_cycles) {
    for (uint64_t cycle = 0; cycle < max_cycles; ++cycle) {
      if (k_->interrupt_o) return write(spec::reg::kIpIntStatus, 1);  // toggles the done bit off
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

  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Model> k_;
#if VM_TRACE_FST
  std::unique_ptr<VerilatedFstC> trace_;  // after k_: closed before the model goes
#endif
  std::string trace_error_;
  uint64_t time_ = 0;  // half cycles
  std::vector<std::unique_ptr<AxiReadMemory>> reads_;
  std::unique_ptr<AxiWriteMemory> write_;
};

}  // namespace systole::sim
