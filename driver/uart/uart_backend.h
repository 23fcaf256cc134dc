// SPDX-License-Identifier: Apache-2.0
// The uart backend: one compute unit on a small board (the compact kernel,
// hw/rtl/systole_lite.sv) behind a serial link that carries register and
// memory transfers in frames (uart_link.h). The board's memory is one bank
// of UartOptions::memory_bytes at device address 0.
#pragma once

#include <memory>

#include "../src/backend.h"
#include "serial_port.h"

namespace systole::uart {

// A backend on an open port; tests put a simulated board behind `port`.
std::shared_ptr<detail::DeviceBackend> make_uart_backend(std::unique_ptr<SerialPort> port,
                                                         const UartOptions& options);

}  // namespace systole::uart
