// SPDX-License-Identifier: Apache-2.0
// Temporary file, fsync, rename.
#include "systole/output_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "systole/fault_points.h"

namespace systole {
namespace {

constexpr std::size_t kBufferBytes = 1 << 20;

Status io_error(const std::string& path, const char* what, int error) {
  return Status(StatusCode::kUnavailable, path + ": " + what + ": " + std::strerror(error));
}

// An OutputFile's temporary beside `path`: PATH.tmp.PID.N (N counts this
// process's files), and whether a file name has that form.
std::string temporary_path(const std::string& path, uint64_t n) {
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(n);
}
bool is_temporary_name(const std::string& name) {
  const std::size_t tmp = name.rfind(".tmp.");
  if (tmp == std::string::npos || tmp == 0) return false;
  const std::string suffix = name.substr(tmp + 5);  // PID.N
  const std::size_t dot = suffix.find('.');
  auto digits = [](const std::string& text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  };
  return dot != std::string::npos && digits(suffix.substr(0, dot)) && digits(suffix.substr(dot + 1));
}

}  // namespace

Result<OutputFile> OutputFile::create(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
    return Status(StatusCode::kInvalidArgument,
                  path + ": exists and is not a regular file; not replacing it");
  static std::atomic<uint64_t> counter{0};
  const std::string temporary = temporary_path(path, counter++);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(path, ("cannot create " + temporary).c_str(), errno);
  return OutputFile(path, temporary, fd);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_(std::move(other.temporary_)),
      fd_(other.fd_),
      synced_(other.synced_),
      size_(other.size_),
      buffer_(std::move(other.buffer_)) {
  other.fd_ = -1;
  other.synced_ = false;
}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    temporary_ = std::move(other.temporary_);
    fd_ = other.fd_;
    synced_ = other.synced_;
    size_ = other.size_;
    buffer_ = std::move(other.buffer_);
    other.fd_ = -1;
    other.synced_ = false;
  }
  return *this;
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  if (fd_ < 0 && !synced_) return;
  if (fd_ >= 0) ::close(fd_);
  std::remove(temporary_.c_str());
  fd_ = -1;
  synced_ = false;
}

Status OutputFile::write(const void* data, std::size_t bytes) {
  if (fd_ < 0) return Status(StatusCode::kInternal, path_ + ": write after sync or failure");
  buffer_.append(static_cast<const char*>(data), bytes);
  size_ += bytes;
  return buffer_.size() >= kBufferBytes ? flush() : ok_status();
}

Status OutputFile::flush() {
  const char* p = buffer_.data();
  std::size_t left = buffer_.size();
  while (left > 0) {
    const ssize_t written = ::write(fd_, p, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) {
      const int error = written < 0 ? errno : ENOSPC;
      discard();
      return io_error(path_, "write failed", error);
    }
    p += written;
    left -= std::size_t(written);
  }
  buffer_.clear();
  return ok_status();
}

Status OutputFile::sync() {
  if (fd_ < 0) return Status(StatusCode::kInternal, path_ + ": sync after sync or failure");
  SYSTOLE_RETURN_IF_ERROR(flush());
  const bool injected = !fault_point(FaultPoint::kOutputFsync, fault_subject(path_)).ok();
  if (injected || ::fsync(fd_) != 0) {
    const int error = injected ? EIO : errno;
    discard();
    return io_error(path_, "fsync failed", error);
  }
  const int fd = fd_;
  fd_ = -1;
  synced_ = true;
  if (::close(fd) != 0) {
    const int error = errno;
    discard();
    return io_error(path_, "close failed", error);
  }
  return ok_status();
}

Status OutputFile::publish() {
  if (!synced_)
    return Status(StatusCode::kInternal, path_ + ": publish before sync, or after publish or failure");
  const bool injected = !fault_point(FaultPoint::kOutputRename, fault_subject(path_)).ok();
  if (injected || std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    const int error = injected ? EIO : errno;
    discard();
    return io_error(path_, "cannot rename the temporary file over it", error);
  }
  synced_ = false;
  return fault_point(FaultPoint::kOutputRenamed, fault_subject(path_));
}

Status OutputFile::commit() {
  SYSTOLE_RETURN_IF_ERROR(sync());
  return publish();
}

Result<DirectoryLock> DirectoryLock::acquire(const std::string& directory, const std::string& holder) {
  const std::string path = directory + "/.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status(StatusCode::kUnavailable, path + ": cannot open (" + std::strerror(errno) + ")");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char text[256] = {};
    const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
    ::close(fd);
    if (error != EWOULDBLOCK)
      return Status(StatusCode::kUnavailable, path + ": cannot lock (" + std::strerror(error) + ")");
    std::string other = got > 0 ? std::string(text, std::size_t(got)) : "another process";
    while (!other.empty() && other.back() == '\n') other.pop_back();
    return Status(StatusCode::kUnavailable,
                  directory + " is in use by " + other +
                      "; wait for that run to end, or give this one another directory");
  }
  const std::string line = holder + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) != ssize_t(line.size())) {
    const int error = errno;
    ::close(fd);
    return Status(StatusCode::kUnavailable, path + ": cannot write (" + std::strerror(error) + ")");
  }
  DirectoryLock lock(fd);
  lock.removed_temporaries_ = remove_stale_temporaries(directory);
  return lock;
}

// Only the lock's holder writes in the directory, so any OutputFile
// temporaries there now belong to a process that died mid-write.
std::vector<std::string> DirectoryLock::remove_stale_temporaries(const std::string& directory) {
  std::vector<std::string> removed;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (!is_temporary_name(name)) continue;
    std::error_code ignored;
    if (entry.is_regular_file(ignored) && std::filesystem::remove(entry.path(), ignored))
      removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
    removed_temporaries_ = std::move(other.removed_temporaries_);
  }
  return *this;
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

Status write_file(const std::string& path, const std::string& bytes) {
  auto file = OutputFile::create(path);
  if (!file.ok()) return file.status();
  SYSTOLE_RETURN_IF_ERROR(file->write(bytes.data(), bytes.size()));
  return file->commit();
}

}  // namespace systole
