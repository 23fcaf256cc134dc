// SPDX-License-Identifier: Apache-2.0
#include "serial_port.h"

#include <fcntl.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace systole::uart {
namespace {

// The standard rates termios names, and their constants.
constexpr struct {
  uint32_t baud;
  speed_t speed;
} kRates[] = {{9600, B9600},       {19200, B19200},     {38400, B38400},    {57600, B57600},
              {115200, B115200},   {230400, B230400},   {460800, B460800},  {921600, B921600},
              {1000000, B1000000}, {2000000, B2000000}, {3000000, B3000000}};

Result<speed_t> speed_of(uint32_t baud) {
  std::string rates;
  for (const auto& rate : kRates) {
    if (rate.baud == baud) return rate.speed;
    rates += (rates.empty() ? "" : ", ") + std::to_string(rate.baud);
  }
  return Status(StatusCode::kInvalidArgument,
                "baud rate " + std::to_string(baud) + " is not a standard rate (" + rates + ")");
}

class PosixSerialPort : public SerialPort {
 public:
  PosixSerialPort(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSerialPort() override { ::close(fd_); }

  std::string name() const override { return path_; }

  Status write(const uint8_t* data, std::size_t size) override {
    while (size > 0) {
      const ssize_t n = ::write(fd_, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status(StatusCode::kUnavailable, path_ + ": write: " + std::strerror(errno));
      data += n;
      size -= std::size_t(n);
    }
    return ok_status();
  }

  Status read(uint8_t* data, std::size_t size, std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t got = 0;
    while (got < size) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      const int ready = left.count() > 0 ? ::poll(&p, 1, int(left.count())) : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return Status(StatusCode::kUnavailable, path_ + ": poll: " + std::strerror(errno));
      if (ready == 0)
        return Status(StatusCode::kTimeout, path_ + ": " + std::to_string(got) + " of " +
                                                std::to_string(size) + " bytes came within " +
                                                std::to_string(timeout.count()) +
                                                " ms: is the board configured and on this port?");
      const ssize_t n = ::read(fd_, data + got, size - got);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) return Status(StatusCode::kUnavailable, path_ + ": read: " + std::strerror(errno));
      if (n == 0) return Status(StatusCode::kUnavailable, path_ + ": the port closed");
      got += std::size_t(n);
    }
    return ok_status();
  }

  void discard_input() override { ::tcflush(fd_, TCIFLUSH); }

 private:
  std::string path_;
  int fd_;
};

}  // namespace

Result<std::unique_ptr<SerialPort>> open_serial_port(const std::string& path, uint32_t baud) {
  if (path.empty())
    return Status(StatusCode::kInvalidArgument, "uart: no serial port given (--device /dev/ttyUSB1, say)");
  Result<speed_t> speed = speed_of(baud);
  if (!speed.ok()) return Status(speed.status().code(), path + ": " + speed.status().message());
  const int fd = ::open(path.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return Status(StatusCode::kUnavailable,
                  path + ": cannot open the board's serial port: " + std::strerror(errno));
  termios tty{};
  if (::tcgetattr(fd, &tty) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return Status(StatusCode::kUnavailable, path + ": not a serial port: " + why);
  }
  ::cfmakeraw(&tty);
  tty.c_cflag |= CLOCAL | CREAD;
  tty.c_cflag &= ~(CSTOPB | PARENB | CRTSCTS);
  ::cfsetispeed(&tty, *speed);
  ::cfsetospeed(&tty, *speed);
  if (::tcsetattr(fd, TCSANOW, &tty) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return Status(StatusCode::kUnavailable, path + ": cannot set " + std::to_string(baud) + " baud: " + why);
  }
  ::tcflush(fd, TCIOFLUSH);
  return std::unique_ptr<SerialPort>(new PosixSerialPort(path, fd));
}

}  // namespace systole::uart
