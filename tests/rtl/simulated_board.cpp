// SPDX-License-Identifier: Apache-2.0
// A simulated small board on a pseudo-terminal: the Verilated small-board
// design (systole_lite_top, 1x1 as on the iCEBreaker, 4 clocks a bit)
// behind the slave side of a pty, so that the uart backend and the tools
// reach it by a device path as they reach an iCEBreaker on /dev/ttyUSB1:
//
//   build/tests/rtl/simulated_board &      # prints the path, e.g. /dev/pts/3
//   build/tools/accel_gemm --backend uart --device /dev/pts/3 --m 9 --n 5 --k 7
//
// The design runs while bytes are on the line or coming back, and waits
// otherwise. It serves until its standard input closes or it is signalled.
#include <fcntl.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "Vsystole_lite_top.h"
#include "soft_uart.h"

namespace {

constexpr uint32_t kClksPerBit = 4;        // the build's parameter
constexpr uint64_t kCyclesPerStep = 4096;  // simulated between looks at the pty

int fail(const char* what) {
  std::fprintf(stderr, "simulated_board: %s: %s\n", what, std::strerror(errno));
  return 1;
}

}  // namespace

int main() {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return fail("posix_openpt");
  const char* path = ptsname(master);
  if (path == nullptr) return fail("ptsname");
  // Held open, so that a client closing its side does not hang the master
  // up; raw, so that no line discipline echoes or translates a byte.
  const int slave = ::open(path, O_RDWR | O_NOCTTY);
  if (slave < 0) return fail(path);
  termios tty{};
  if (::tcgetattr(slave, &tty) != 0) return fail("tcgetattr");
  ::cfmakeraw(&tty);
  if (::tcsetattr(slave, TCSANOW, &tty) != 0) return fail("tcsetattr");
  std::printf("%s\n", path);
  std::fflush(stdout);

  systole::testing::SoftUart<Vsystole_lite_top, kClksPerBit> board;
  std::vector<uint8_t> in(4096);
  bool active = false;  // bytes went in or came out in the last step
  for (;;) {
    pollfd fds[2] = {{master, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
    if (::poll(fds, 2, active ? 0 : 20) < 0 && errno != EINTR) return fail("poll");
    if (fds[1].revents & (POLLIN | POLLHUP)) {
      char c;
      if (::read(STDIN_FILENO, &c, 1) <= 0) return 0;  // stdin closed: done
    }
    ssize_t n = 0;
    if (fds[0].revents & POLLIN) {
      n = ::read(master, in.data(), in.size());
      if (n < 0 && errno != EAGAIN && errno != EINTR && errno != EIO) return fail("read");
      if (n > 0) board.send(in.data(), std::size_t(n));
    }
    const std::vector<uint8_t> out = board.receive(SIZE_MAX, kCyclesPerStep);
    for (std::size_t done = 0; done < out.size();) {
      const ssize_t w = ::write(master, out.data() + done, out.size() - done);
      if (w < 0 && errno != EINTR) return fail("write");
      if (w > 0) done += std::size_t(w);
    }
    active = n > 0 || !out.empty() || board.line_busy();
  }
}
