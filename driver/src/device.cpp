// SPDX-License-Identifier: Apache-2.0
// The device API on top of a backend: identification from the ID registers,
// buffers with host views, and the ap_ctrl_hs launch sequence.
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "backend.h"
#include "systole/descriptor.h"
#include "systole/driver.h"

namespace systole {

namespace detail {

struct BufferState {
  std::shared_ptr<DeviceBackend> backend;
  uint64_t address = 0;
  uint32_t bank = 0;
  std::size_t size = 0;
  // The host view: device memory itself where the backend shares it, else
  // a copy in anonymous pages of its own (`copy`), which read as zeros and
  // take memory only where the host writes or syncs: a card buffer the
  // host never touches (the parameters' gradients and rows kept on a card)
  // costs the host nothing, as with XRT, where it is the card's memory.
  uint8_t* host = nullptr;
  uint8_t* copy = nullptr;

  bool mapped() const { return copy == nullptr; }
  ~BufferState() {
    if (copy) munmap(copy, size);
    backend->release(address);
  }
};

struct RunState {
  std::shared_ptr<DeviceBackend> backend;
  std::shared_ptr<BufferState> command_list;  // kept alive while the run is
  uint32_t unit = 0;
  std::mutex mutex;
  bool finished = false;
  spec::ErrorCode error = spec::ErrorCode::kOk;
  uint32_t error_index = 0;
  spec::PerfCounters counters;
};

}  // namespace detail

namespace {

using detail::read_register64;

void write_register64(detail::DeviceBackend& backend, uint32_t unit, uint32_t offset_lo, uint64_t value) {
  backend.write_register(unit, offset_lo, uint32_t(value));
  backend.write_register(unit, offset_lo + 4, uint32_t(value >> 32));
}

Status check_range(std::size_t size, std::size_t bytes, std::size_t offset, const char* what) {
  if (offset > size || bytes > size - offset)
    return Status(StatusCode::kInvalidArgument, std::string(what) + ": range [" + std::to_string(offset) +
                                                    ", " + std::to_string(offset + bytes) +
                                                    ") is outside the buffer of " + std::to_string(size) +
                                                    " bytes");
  return ok_status();
}

Result<DeviceInfo> identify(detail::DeviceBackend& backend, const std::string& backend_name, uint32_t index) {
  namespace reg = spec::reg;
  if (backend.compute_units() == 0)
    return Status(StatusCode::kUnavailable, backend.name() + " has no compute units");
  const uint32_t id = backend.read_register(0, reg::kId);
  SYSTOLE_RETURN_IF_ERROR(backend.link_status());
  if (id != spec::kDeviceId)
    return Status(StatusCode::kUnavailable,
                  backend.name() + ": not a Systole kernel (ID register " + std::to_string(id) + ")");
  DeviceInfo info;
  info.backend = backend_name;
  info.index = index;
  info.name = backend.name();
  info.version = backend.read_register(0, reg::kVersion);
  if ((info.version >> 16) != spec::kVersionMajor)
    return Status(StatusCode::kUnavailable,
                  backend.name() + ": kernel interface version " + std::to_string(info.version >> 16) +
                      " but this driver speaks " + std::to_string(spec::kVersionMajor));
  info.shape = {backend.read_register(0, reg::kArrayRows), backend.read_register(0, reg::kArrayCols)};
  info.max_m = backend.read_register(0, reg::kMaxM);
  info.max_n = backend.read_register(0, reg::kMaxN);
  info.max_k = backend.read_register(0, reg::kMaxK);
  info.max_descriptors = backend.read_register(0, reg::kMaxDescriptors);
  info.beat_bytes = backend.read_register(0, reg::kBeatBytes);
  // A kernel of interface 2.0 has no Features register (it reads as 0).
  info.features = backend.read_register(0, reg::kFeatures);
  info.compute_units = backend.compute_units();
  info.host_threads = backend.host_threads();
  info.hbm_banks = backend.hbm_banks();
  info.bank_bytes = backend.bank_bytes();
  SYSTOLE_RETURN_IF_ERROR(backend.link_status());
  return info;
}

}  // namespace

Result<spec::ArrayShape> parse_array_shape(const std::string& text) {
  // Digits only on both sides (no sign, space or overflow that sscanf's %u
  // would wrap into another size), each 1 to 65536.
  const auto bad = [&]() {
    return Status(StatusCode::kInvalidArgument,
                  "expected ROWSxCOLS such as 128x128, each 1 to 65536, got '" + text + "'");
  };
  const std::size_t x = text.find('x');
  if (x == std::string::npos) return bad();
  uint32_t sizes[2] = {0, 0};
  const std::string parts[2] = {text.substr(0, x), text.substr(x + 1)};
  for (int i = 0; i < 2; ++i) {
    if (parts[i].empty() || parts[i].size() > 5 ||
        parts[i].find_first_not_of("0123456789") != std::string::npos)
      return bad();
    sizes[i] = uint32_t(std::stoul(parts[i]));
    if (sizes[i] == 0 || sizes[i] > 65536) return bad();
  }
  return spec::ArrayShape{sizes[0], sizes[1]};
}

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kTimeout:
      return "timeout";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kDeviceError:
      return "device_error";
    case StatusCode::kDataLoss:
      return "data_loss";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kAborted:
      return "aborted";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status current_exception_status(const std::string& where) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kInternal, where + ": out of memory");
  } catch (const std::exception& e) {
    return Status(StatusCode::kInternal, where + ": " + e.what());
  } catch (...) {
    return Status(StatusCode::kInternal, where + ": an unknown exception");
  }
}

// ---------------------------------------------------------------------------
// Device

namespace {

// The backends compiled into this build, in the order backends() lists them.
struct BackendEntry {
  BackendCapabilities capabilities;
  Result<std::shared_ptr<detail::DeviceBackend>> (*open)(uint32_t index, const DeviceOptions& options);
};

const BackendEntry kBackends[] = {
    //  name       on demand  host cores  board  hardware
    {{"sw_emu", true, true, false, false}, detail::open_sw_emu},
#if SYSTOLE_HAVE_HW_EMU
    {{"hw_emu", true, true, false, false}, detail::open_hw_emu},
#endif
#if SYSTOLE_HAVE_XRT
    {{"xrt", false, false, false, true}, detail::open_xrt},
#endif
#if SYSTOLE_HAVE_PERF
    {{"perf", true, false, true, false}, detail::open_perf},
#endif
    {{"uart", false, false, false, true}, detail::open_uart},
};

}  // namespace

std::vector<BackendCapabilities> Device::backends() {
  std::vector<BackendCapabilities> backends;
  for (const BackendEntry& entry : kBackends) backends.push_back(entry.capabilities);
  return backends;
}

Result<Device> Device::open(const std::string& backend_name, uint32_t index, const DeviceOptions& options) {
  for (const BackendEntry& entry : kBackends) {
    if (backend_name != entry.capabilities.name) continue;
    Result<std::shared_ptr<detail::DeviceBackend>> backend = entry.open(index, options);
    if (!backend.ok()) return backend.status();
    return detail::attach_device(std::move(backend).value(), backend_name, index);
  }
  std::string built;
  for (const BackendEntry& entry : kBackends) built += (built.empty() ? "" : ", ") + entry.capabilities.name;
  return Status(StatusCode::kNotFound,
                "unknown backend '" + backend_name + "' (this build has: " + built + ")");
}

Status parse_device(const std::string& text, uint32_t* index, DeviceOptions* options) {
  if (text.empty())
    return Status(StatusCode::kInvalidArgument, "--device: empty (an index, or a serial port)");
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    if (text.size() > 9)
      return Status(StatusCode::kInvalidArgument, "--device: index " + text + " is too large");
    *index = uint32_t(std::stoul(text));
    return ok_status();
  }
  *index = 0;
  options->uart.port = text;
  return ok_status();
}

Result<Device> detail::attach_device(std::shared_ptr<DeviceBackend> backend, const std::string& backend_name,
                                     uint32_t index) {
  Result<DeviceInfo> info = identify(*backend, backend_name, index);
  if (!info.ok()) return info.status();
  Device device;
  device.backend_ = std::move(backend);
  device.info_ = std::make_shared<const DeviceInfo>(std::move(info).value());
  return device;
}

std::optional<CardModel> Device::card_model() const {
  detail::CardModelBackend* model = backend_ ? backend_->card_model() : nullptr;
  if (!model) return std::nullopt;
  return CardModel(backend_, model);
}

Projection CardModel::projection() const { return model_->projection(); }
void CardModel::meet_host_threads(uint32_t threads) const { model_->meet_host_threads(threads); }

namespace {

// Every summed field of a projection, for since() and +=.
template <class Combine>
void combine(Projection& into, const Projection& other, Combine op) {
  op(into.seconds, other.seconds);
  op(into.launch_seconds, other.launch_seconds);
  op(into.link_seconds, other.link_seconds);
  op(into.link_bytes, other.link_bytes);
  op(into.launches, other.launches);
  op(into.busy_cycles, other.busy_cycles);
  op(into.array_cycles, other.array_cycles);
  op(into.macs, other.macs);
  op(into.hbm_wait_cycles, other.hbm_wait_cycles);
  op(into.compute_bound, other.compute_bound);
  op(into.memory_bound, other.memory_bound);
}

}  // namespace

Projection Projection::since(const Projection& before) const {
  Projection delta = *this;
  combine(delta, before, [](auto& a, auto b) { a -= b; });
  return delta;
}

Projection& Projection::operator+=(const Projection& more) {
  combine(*this, more, [](auto& a, auto b) { a += b; });
  return *this;
}

Result<Buffer> Device::allocate(std::size_t bytes, uint32_t bank) {
  Result<uint64_t> address = backend_->allocate(bytes, bank);
  if (!address.ok()) return address.status();
  auto state = std::make_shared<detail::BufferState>();
  state->backend = backend_;
  state->address = *address;
  state->bank = bank;
  state->size = bytes;
  // Device memory starts zeroed (a released block is scrubbed), as the copy.
  state->host = backend_->shared_memory(*address, bytes);
  if (!state->host && bytes > 0) {
    void* pages =
        mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pages == MAP_FAILED)
      return Status(StatusCode::kUnavailable,
                    "no host memory for the host view of a " + std::to_string(bytes) + "-byte buffer");
    state->copy = state->host = static_cast<uint8_t*>(pages);
  }
  return Buffer(std::move(state));
}

Result<Buffer> Device::import_host(void* host, std::size_t bytes) {
  if (!host || bytes == 0)
    return Status(StatusCode::kInvalidArgument, "import_host: no host memory (" + std::to_string(bytes) +
                                                    " bytes at " + (host ? "a pointer" : "null") + ")");
  Result<uint64_t> address = backend_->import_host(host, bytes);
  if (!address.ok()) return address.status();
  auto state = std::make_shared<detail::BufferState>();
  state->backend = backend_;
  state->address = *address;
  state->bank = Buffer::kHostMemory;
  state->size = bytes;
  state->host = static_cast<uint8_t*>(host);  // mapped: the kernel works on it
  return Buffer(std::move(state));
}

Result<Run> Device::start(uint32_t unit, const Buffer& command_list) {
  namespace reg = spec::reg;
  if (unit >= backend_->compute_units())
    return Status(StatusCode::kInvalidArgument, "compute unit " + std::to_string(unit) +
                                                    " does not exist (device has " +
                                                    std::to_string(backend_->compute_units()) + ")");
  if (!command_list || command_list.state_->backend != backend_)
    return Status(StatusCode::kInvalidArgument, "the command list is not a buffer of this device");
  const uint32_t control = backend_->read_register(unit, reg::kControl);
  SYSTOLE_RETURN_IF_ERROR(backend_->link_status());
  if (!(control & spec::ctrl::kApIdle))
    return Status(StatusCode::kUnavailable, "compute unit " + std::to_string(unit) + " is busy");

  // The operand ports see device memory from address 0, so descriptor
  // addresses are device addresses.
  write_register64(*backend_, unit, reg::kCommandAddrLo, command_list.address());
  for (uint32_t port = 1; port < spec::kMemoryPorts; ++port)
    write_register64(*backend_, unit, reg::port_base(port), 0);
  write_register64(*backend_, unit, reg::kMemBytesLo, backend_->address_limit());
  backend_->write_register(unit, reg::kControl, spec::ctrl::kApStart);
  SYSTOLE_RETURN_IF_ERROR(backend_->link_status());

  auto state = std::make_shared<detail::RunState>();
  state->backend = backend_;
  state->command_list = command_list.state_;
  state->unit = unit;
  return Run(std::move(state));
}

// ---------------------------------------------------------------------------
// Buffer

std::size_t Buffer::size() const { return state_->size; }
uint32_t Buffer::bank() const { return state_->bank; }
uint64_t Buffer::address() const { return state_->address; }
void* Buffer::map() const { return state_->host; }
bool Buffer::mapped() const { return state_->mapped(); }

Status Buffer::write(const void* src, std::size_t bytes, std::size_t offset) {
  SYSTOLE_RETURN_IF_ERROR(check_range(size(), bytes, offset, "Buffer::write"));
  if (bytes > 0) std::memcpy(state_->host + offset, src, bytes);
  return ok_status();
}

Status Buffer::read(void* dst, std::size_t bytes, std::size_t offset) const {
  SYSTOLE_RETURN_IF_ERROR(check_range(size(), bytes, offset, "Buffer::read"));
  if (bytes > 0) std::memcpy(dst, state_->host + offset, bytes);
  return ok_status();
}

Status Buffer::sync(SyncDirection direction) { return sync(direction, size(), 0); }

Status Buffer::sync(SyncDirection direction, std::size_t bytes, std::size_t offset) {
  SYSTOLE_RETURN_IF_ERROR(check_range(size(), bytes, offset, "Buffer::sync"));
  if (state_->mapped()) return ok_status();  // the host view is device memory
  uint8_t* host = state_->host + offset;
  const uint64_t address = state_->address + offset;
  return direction == SyncDirection::kToDevice ? state_->backend->write_memory(address, host, bytes)
                                               : state_->backend->read_memory(address, host, bytes);
}

// ---------------------------------------------------------------------------
// Run

Status Run::wait(std::chrono::milliseconds timeout) {
  namespace reg = spec::reg;
  std::lock_guard<std::mutex> lock(state_->mutex);
  detail::DeviceBackend& backend = *state_->backend;
  const uint32_t unit = state_->unit;
  if (!state_->finished) {
    const bool done = backend.wait_done(unit, timeout);
    SYSTOLE_RETURN_IF_ERROR(backend.link_status());
    if (!done)
      return Status(StatusCode::kTimeout, "compute unit " + std::to_string(unit) + " not done after " +
                                              std::to_string(timeout.count()) + " ms");
    backend.read_register(unit, reg::kControl);  // clears ap_done
    state_->error = static_cast<spec::ErrorCode>(backend.read_register(unit, reg::kStatus));
    state_->error_index = backend.read_register(unit, reg::kErrorIndex);
    spec::PerfCounters& counters = state_->counters;
    counters.busy_cycles = read_register64(backend, unit, reg::kBusyCyclesLo);
    counters.macs = read_register64(backend, unit, reg::kMacsLo);
    counters.dma_read_bytes = read_register64(backend, unit, reg::kDmaReadBytesLo);
    counters.dma_write_bytes = read_register64(backend, unit, reg::kDmaWriteBytesLo);
    counters.stall_cycles = read_register64(backend, unit, reg::kStallCyclesLo);
    counters.descriptors_done = backend.read_register(unit, reg::kDescriptorsDone);
    SYSTOLE_RETURN_IF_ERROR(backend.link_status());
    state_->finished = true;
  }
  if (state_->error == spec::ErrorCode::kOk) return ok_status();
  std::string where = "the command-list header";
  if (state_->error_index != spec::kHeaderErrorIndex) {
    where = "descriptor " + std::to_string(state_->error_index);
    // Its opcode, from the list as the host wrote it: "descriptor 2 (adam)".
    const detail::BufferState& list = *state_->command_list;
    const uint64_t at = spec::command_list_bytes(state_->error_index);
    if (at < list.size) {
      const uint8_t opcode = list.host[at];
      const char* name = spec::opcode_name(opcode);
      where += name ? std::string(" (") + name + ")" : " (opcode " + std::to_string(opcode) + ")";
    }
  }
  return Status(StatusCode::kDeviceError,
                std::string("kernel error ") + spec::error_code_name(state_->error) + " (" +
                    std::to_string(static_cast<uint32_t>(state_->error)) + ") in " + where);
}

spec::ErrorCode Run::error_code() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->error;
}

uint32_t Run::error_index() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->error_index;
}

spec::PerfCounters Run::counters() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->counters;
}

}  // namespace systole
