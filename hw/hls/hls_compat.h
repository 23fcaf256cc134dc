// SPDX-License-Identifier: Apache-2.0
// The few Vitis HLS facilities the kernel uses, for building it with an
// ordinary C++ compiler. Under Vitis HLS (__SYNTHESIS__ or __VITIS_HLS__) the
// real headers are used instead; `#pragma HLS` lines are ignored by g++.
#pragma once

#if defined(__SYNTHESIS__) || defined(__VITIS_HLS__)
#include <hls_stream.h>
#else
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <deque>

namespace hls {

// An unbounded FIFO with the hls::stream interface. Dataflow stages run one
// after another in C simulation, as in Vitis csim, so a stage may produce its
// whole output before the next one starts.
template <class T>
class stream {
 public:
  stream() = default;
  explicit stream(const char* /*name*/) {}
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  void write(const T& value) { fifo_.push_back(value); }
  T read() {
    if (fifo_.empty()) {  // a dataflow bug: in hardware this read would hang
      std::fputs("hls::stream: read from an empty stream\n", stderr);
      std::abort();
    }
    T value = fifo_.front();
    fifo_.pop_front();
    return value;
  }
  bool empty() const { return fifo_.empty(); }
  std::size_t size() const { return fifo_.size(); }

 private:
  std::deque<T> fifo_;
};

}  // namespace hls
#endif
