// SPDX-License-Identifier: Apache-2.0
// A file that appears whole or not at all: bytes go to a temporary file
// beside the destination (unique to this process and object), which
// commit() fsyncs and renames over the destination. Until then the
// destination is untouched; an OutputFile destroyed without a commit
// removes its temporary file. Only a regular file (or nothing) may be
// replaced. commit() is sync() then publish(): a writer of several files
// that must appear together syncs them all before it publishes any.
//
// Fault points (systole/fault_points.h), with the file's base name as the
// subject: output.fsync before the fsync (error: the fsync fails),
// output.rename between fsync and rename (error: the rename fails), and
// output.renamed after the rename (kill only).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "systole/status.h"

namespace systole {

class OutputFile {
 public:
  static Result<OutputFile> create(const std::string& path);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  const std::string& path() const { return path_; }
  // Bytes written so far.
  uint64_t size() const { return size_; }

  // Appends `bytes` bytes (buffered). A failure (disk full) is reported
  // here or by commit(), naming the destination.
  Status write(const void* data, std::size_t bytes);
  // Flushes, fsyncs and closes the temporary file.
  Status sync();
  // Renames the synced temporary file over the destination.
  Status publish();
  Status commit();

 private:
  OutputFile(std::string path, std::string temporary, int fd)
      : path_(std::move(path)), temporary_(std::move(temporary)), fd_(fd) {}
  Status flush();
  void discard();

  std::string path_, temporary_;
  int fd_ = -1;          // open until sync()
  bool synced_ = false;  // the temporary file is closed and waits for publish()
  uint64_t size_ = 0;
  std::string buffer_;
};

// `bytes` to `path` through an OutputFile: the file appears whole or not at
// all.
Status write_file(const std::string& path, const std::string& bytes);

// An exclusive lock on a directory that one process writes (a run's
// checkpoint directory): flock(2) on DIR/.lock, held until the handle goes
// or the process ends, however it ends. The file says who holds it, so a
// second process is refused with the holder's name. Once it holds the lock,
// it removes the temporary files an OutputFile of a killed process left
// there (a SIGKILL mid-write leaves NAME.tmp.PID.N beside NAME, which is
// intact).
class DirectoryLock {
 public:
  // `holder` describes this process ("accel_train pid 123 on host h").
  // Fails with kUnavailable naming the directory and the current holder.
  static Result<DirectoryLock> acquire(const std::string& directory, const std::string& holder);
  DirectoryLock(DirectoryLock&& other) noexcept
      : fd_(other.fd_), removed_temporaries_(std::move(other.removed_temporaries_)) {
    other.fd_ = -1;
  }
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();

  // The names of the stale temporaries removed when the lock was taken.
  const std::vector<std::string>& removed_temporaries() const { return removed_temporaries_; }

 private:
  explicit DirectoryLock(int fd) : fd_(fd) {}
  static std::vector<std::string> remove_stale_temporaries(const std::string& directory);
  int fd_ = -1;
  std::vector<std::string> removed_temporaries_;
};

}  // namespace systole
