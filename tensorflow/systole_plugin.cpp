// SPDX-License-Identifier: Apache-2.0
// Systole as a TensorFlow PluggableDevice: device type SYSTOLE, one
// TensorFlow device per compute unit of one Systole device (sw_emu unless
// configured otherwise), tensors in the units' device memory through the
// driver, and kernels: MatMul and Conv2D with its two gradients on the
// array, reading the tensors in the units' memory; Sum over leading axes
// on the units' vector engine; Add, Relu, ReluGrad and other sums on the
// host over that memory.
//
// Configured by the environment, read when TensorFlow loads the plugin:
//   SYSTOLE_TF_BACKEND  sw_emu (default) or hw_emu (the RTL)
//   SYSTOLE_TF_UNITS    compute units, each a device /device:SYSTOLE:i (2)
//   SYSTOLE_TF_ARRAY    the array, RxC (128x128)
//
// A tensor's memory is a driver Buffer in its unit's bank. TensorFlow names
// it by the buffer's host view (Buffer::map), because TensorFlow's own
// kernels for the default device (assigning and updating resource
// variables, Identity, Shape) read and write a pluggable device's memory
// as the host's, and the C API that would let a plugin do those through
// its own copies (kernels_experimental.h) is not exported by the wheel.
// So only backends whose device memory is the host's view (sw_emu, hw_emu)
// can serve TensorFlow; the plugin finds the Buffer and offset from
// the address (TensorFlow offsets into a tensor for its slices), and its
// kernels reach the data only through the buffer. Streams are synchronous:
// each copy and kernel is done when its call returns, so events are
// complete once recorded.
#include <tensorflow/c/experimental/stream_executor/stream_executor.h>
#include <tensorflow/c/tf_status.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "card.h"

// The stream executor's own types, which TensorFlow leaves to the plugin.
struct SP_Stream_st {};
struct SP_Event_st {};
struct SP_Timer_st {
  std::chrono::steady_clock::time_point start, stop;
};

namespace systole_tf {

Card* card = nullptr;

namespace {

constexpr char kPlatformName[] = "SYSTOLE";  // TensorFlow: [A-Z][A-Z_]*

void set_error(TF_Status* status, const Status& error) {
  TF_SetStatus(status, error.code() == StatusCode::kInvalidArgument ? TF_INVALID_ARGUMENT : TF_INTERNAL,
               ("Systole: " + error.message()).c_str());
}

uint32_t unit_of(const SP_Device* device) { return uint32_t(device->ordinal); }

// ---- StreamExecutor: memory, copies, and synchronous streams ----

void allocate(const SP_Device* device, uint64_t size, int64_t /*memory_space*/, SP_DeviceMemoryBase* mem) {
  mem->struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
  auto handle = card->allocate(unit_of(device), size);
  mem->opaque = handle.ok() ? *handle : nullptr;  // null: TensorFlow reports the allocation failed
  mem->size = handle.ok() ? size : 0;
}
void deallocate(const SP_Device*, SP_DeviceMemoryBase* mem) { card->release(mem->opaque); }
void* host_allocate(const SP_Device*, uint64_t size) { return std::aligned_alloc(64, (size + 63) / 64 * 64); }
void host_deallocate(const SP_Device*, void* mem) { std::free(mem); }
TF_Bool allocator_stats(const SP_Device*, SP_AllocatorStats* stats) {
  stats->struct_size = SP_ALLOCATORSTATS_STRUCT_SIZE;
  return false;
}
TF_Bool memory_usage(const SP_Device*, int64_t* free, int64_t* total) {
  const systole::DeviceInfo& info = card->info();
  *total = int64_t(info.bank_bytes);  // a unit's tensors live in one bank
  *free = *total;
  return true;
}

void create_stream(const SP_Device*, SP_Stream* stream, TF_Status*) { *stream = new SP_Stream_st; }
void destroy_stream(const SP_Device*, SP_Stream stream) { delete stream; }
void stream_dependency(const SP_Device*, SP_Stream, SP_Stream, TF_Status*) {}
void stream_status(const SP_Device*, SP_Stream, TF_Status* status) { TF_SetStatus(status, TF_OK, ""); }
void create_event(const SP_Device*, SP_Event* event, TF_Status*) { *event = new SP_Event_st; }
void destroy_event(const SP_Device*, SP_Event event) { delete event; }
SE_EventStatus event_status(const SP_Device*, SP_Event) { return SE_EVENT_COMPLETE; }
void record_event(const SP_Device*, SP_Stream, SP_Event, TF_Status*) {}
void wait_for_event(const SP_Device*, SP_Stream, SP_Event, TF_Status*) {}
void create_timer(const SP_Device*, SP_Timer* timer, TF_Status*) { *timer = new SP_Timer_st; }
void destroy_timer(const SP_Device*, SP_Timer timer) { delete timer; }
void start_timer(const SP_Device*, SP_Stream, SP_Timer timer, TF_Status*) {
  timer->start = std::chrono::steady_clock::now();
}
void stop_timer(const SP_Device*, SP_Stream, SP_Timer timer, TF_Status*) {
  timer->stop = std::chrono::steady_clock::now();
}
uint64_t timer_nanoseconds(SP_Timer timer) {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(timer->stop - timer->start).count());
}

void report(const Status& result, TF_Status* status) {
  if (result.ok())
    TF_SetStatus(status, TF_OK, "");
  else
    set_error(status, result);
}
void sync_dtoh(const SP_Device*, void* host, const SP_DeviceMemoryBase* src, uint64_t size,
               TF_Status* status) {
  report(card->copy_out(host, src->opaque, size), status);
}
void sync_htod(const SP_Device*, SP_DeviceMemoryBase* dst, const void* host, uint64_t size,
               TF_Status* status) {
  report(card->copy_in(dst->opaque, host, size), status);
}
void sync_dtod(const SP_Device*, SP_DeviceMemoryBase* dst, const SP_DeviceMemoryBase* src, uint64_t size,
               TF_Status* status) {
  std::vector<char> bytes(size);
  Status result = card->copy_out(bytes.data(), src->opaque, size);
  if (result.ok()) result = card->copy_in(dst->opaque, bytes.data(), size);
  report(result, status);
}
void dtoh(const SP_Device* d, SP_Stream, void* host, const SP_DeviceMemoryBase* src, uint64_t size,
          TF_Status* status) {
  sync_dtoh(d, host, src, size, status);
}
void htod(const SP_Device* d, SP_Stream, SP_DeviceMemoryBase* dst, const void* host, uint64_t size,
          TF_Status* status) {
  sync_htod(d, dst, host, size, status);
}
void dtod(const SP_Device* d, SP_Stream, SP_DeviceMemoryBase* dst, const SP_DeviceMemoryBase* src,
          uint64_t size, TF_Status* status) {
  sync_dtod(d, dst, src, size, status);
}
void done(const SP_Device*, SP_Event, TF_Status* status) { TF_SetStatus(status, TF_OK, ""); }
void stream_done(const SP_Device*, SP_Stream, TF_Status* status) { TF_SetStatus(status, TF_OK, ""); }
void all_done(const SP_Device*, TF_Status* status) { TF_SetStatus(status, TF_OK, ""); }
void fill(SP_DeviceMemoryBase* location, const void* pattern, std::size_t width, uint64_t size,
          TF_Status* status) {
  std::vector<char> bytes(size);
  for (uint64_t i = 0; i < size; i += width)
    std::memcpy(bytes.data() + i, pattern, std::min<uint64_t>(width, size - i));
  report(card->copy_in(location->opaque, bytes.data(), size), status);
}
void mem_zero(const SP_Device*, SP_Stream, SP_DeviceMemoryBase* location, uint64_t size, TF_Status* status) {
  const uint8_t zero = 0;
  fill(location, &zero, 1, size, status);
}
void memset8(const SP_Device*, SP_Stream, SP_DeviceMemoryBase* location, uint8_t pattern, uint64_t size,
             TF_Status* status) {
  fill(location, &pattern, 1, size, status);
}
void memset32(const SP_Device*, SP_Stream, SP_DeviceMemoryBase* location, uint32_t pattern, uint64_t size,
              TF_Status* status) {
  fill(location, &pattern, 4, size, status);
}
TF_Bool host_callback(const SP_Device*, SP_Stream, SE_StatusCallbackFn callback, void* arg) {
  TF_Status* status = TF_NewStatus();
  callback(arg, status);
  TF_DeleteStatus(status);
  return true;
}

// ---- the platform and its devices ----

void device_count(const SP_Platform*, int* count, TF_Status*) { *count = card ? int(card->units()) : 0; }
void create_device(const SP_Platform*, SE_CreateDeviceParams* params, TF_Status*) {
  params->device->struct_size = SP_DEVICE_STRUCT_SIZE;
  params->device->hardware_name = "Systole bf16 systolic array";
  params->device->device_vendor = "Systole";
}
void destroy_device(const SP_Platform*, SP_Device*) {}
void create_device_fns(const SP_Platform*, SE_CreateDeviceFnsParams* params, TF_Status*) {
  params->device_fns->struct_size = SP_DEVICE_FNS_STRUCT_SIZE;
}
void destroy_device_fns(const SP_Platform*, SP_DeviceFns*) {}
void create_stream_executor(const SP_Platform*, SE_CreateStreamExecutorParams* params, TF_Status*) {
  SP_StreamExecutor* se = params->stream_executor;
  se->struct_size = SP_STREAMEXECUTOR_STRUCT_SIZE;
  se->allocate = allocate;
  se->deallocate = deallocate;
  se->host_memory_allocate = host_allocate;
  se->host_memory_deallocate = host_deallocate;
  se->get_allocator_stats = allocator_stats;
  se->device_memory_usage = memory_usage;
  se->create_stream = create_stream;
  se->destroy_stream = destroy_stream;
  se->create_stream_dependency = stream_dependency;
  se->get_stream_status = stream_status;
  se->create_event = create_event;
  se->destroy_event = destroy_event;
  se->get_event_status = event_status;
  se->record_event = record_event;
  se->wait_for_event = wait_for_event;
  se->create_timer = create_timer;
  se->destroy_timer = destroy_timer;
  se->start_timer = start_timer;
  se->stop_timer = stop_timer;
  se->memcpy_dtoh = dtoh;
  se->memcpy_htod = htod;
  se->memcpy_dtod = dtod;
  se->sync_memcpy_dtoh = sync_dtoh;
  se->sync_memcpy_htod = sync_htod;
  se->sync_memcpy_dtod = sync_dtod;
  se->block_host_for_event = done;
  se->block_host_until_done = stream_done;
  se->synchronize_all_activity = all_done;
  se->mem_zero = mem_zero;
  se->memset = memset8;
  se->memset32 = memset32;
  se->host_callback = host_callback;
}
void destroy_stream_executor(const SP_Platform*, SP_StreamExecutor*) {}
void create_timer_fns(const SP_Platform*, SP_TimerFns* timer_fns, TF_Status*) {
  timer_fns->struct_size = SP_TIMER_FNS_STRUCT_SIZE;
  timer_fns->nanoseconds = timer_nanoseconds;
}
void destroy_timer_fns(const SP_Platform*, SP_TimerFns*) {}
void destroy_platform(SP_Platform*) {}
void destroy_platform_fns(SP_PlatformFns*) {}

}  // namespace
}  // namespace systole_tf

using namespace systole_tf;

extern "C" {

// TensorFlow aborts the process when this fails, so a configuration that
// cannot be opened is reported here, by name, and the platform registers
// with no devices: `import tensorflow` goes on, and a placement on
// /device:SYSTOLE:0 then fails as for any device that is not there.
void SE_InitPlugin(SE_PlatformRegistrationParams* params, TF_Status* status) {
  auto settings = Settings::from_environment();
  Result<std::unique_ptr<Card>> opened =
      settings.ok() ? Card::open(*settings) : Result<std::unique_ptr<Card>>(settings.status());
  if (opened.ok())
    card = opened->release();
  else
    std::fprintf(stderr, "Systole: no SYSTOLE devices: %s\n", opened.status().message().c_str());

  params->major_version = SE_MAJOR;
  params->minor_version = SE_MINOR;
  params->patch_version = SE_PATCH;
  params->platform->struct_size = SP_PLATFORM_STRUCT_SIZE;
  params->platform->name = kPlatformName;
  params->platform->type = kDeviceType;
  params->platform->supports_unified_memory = false;
  params->platform->use_bfc_allocator = false;  // each tensor its own buffer
  params->platform->force_memory_growth = false;
  SP_PlatformFns* fns = params->platform_fns;
  fns->get_device_count = device_count;
  fns->create_device = create_device;
  fns->destroy_device = destroy_device;
  fns->create_device_fns = create_device_fns;
  fns->destroy_device_fns = destroy_device_fns;
  fns->create_stream_executor = create_stream_executor;
  fns->destroy_stream_executor = destroy_stream_executor;
  fns->create_timer_fns = create_timer_fns;
  fns->destroy_timer_fns = destroy_timer_fns;
  params->destroy_platform = destroy_platform;
  params->destroy_platform_fns = destroy_platform_fns;
  TF_SetStatus(status, TF_OK, "");
}

}  // extern "C"
