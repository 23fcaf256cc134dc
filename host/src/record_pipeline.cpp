// SPDX-License-Identifier: Apache-2.0
// The TFRecord input pipeline: worker threads read and parse ahead per
// cycle slot; one assembler thread decides the order, shuffles, batches and
// keeps `prefetch` batches ready.
#include "systole/record_pipeline.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "systole/tfrecord.h"

namespace systole {
namespace {

constexpr std::size_t kSlotDepth = 256;  // parsed rows a slot holds ahead
constexpr std::size_t kChunk = 32;       // rows a worker parses per turn

// An example's values, then its label.
using Row = std::vector<float>;

// Generators of an epoch's shuffles, so any epoch can be replayed (resume):
// the order of the files, the same on every shard (when every shard reads
// every file, they must agree on the interleaved order they split), and a
// shard's own shuffle buffer.
std::mt19937_64 file_order_rng(uint64_t seed, uint32_t epoch) {
  std::seed_seq sequence{uint32_t(seed), uint32_t(seed >> 32), epoch};
  return std::mt19937_64(sequence);
}

std::mt19937_64 buffer_rng(uint64_t seed, uint32_t epoch, uint32_t shard) {
  std::seed_seq sequence{uint32_t(seed), uint32_t(seed >> 32), epoch, shard, 1u};
  return std::mt19937_64(sequence);
}

std::mt19937_64 negatives_rng(uint64_t seed, uint32_t epoch, uint32_t shard) {
  std::seed_seq sequence{uint32_t(seed), uint32_t(seed >> 32), epoch, shard, 2u};
  return std::mt19937_64(sequence);
}

// The pipeline's threads run kInputNice below the thread that starts
// them. They work ahead of the consumer (prefetch) and must not take a
// core from the compute threads in the middle of a step: where both want
// every core, the scheduler then runs them while the compute threads wait
// (their barriers, the all-reduce). On 2 cores, the CF model's array
// waited for input 5.8-6.1 % of the time at the same priority and 1.3-1.4
// % at 10 (at 19, 12 %: the readers then fall behind). Raising one's own
// nice value needs no privilege; where it fails, nothing changes.
constexpr int kInputNice = 10;

void yield_to_compute() {
  const pid_t thread = gettid();
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, id_t(thread));
  if (errno == 0) setpriority(PRIO_PROCESS, id_t(thread), std::min(19, current + kInputNice));
}

}  // namespace

struct RecordPipeline::Epoch {
  struct Slot {
    int64_t file = -1;  // index into files; -1: idle
    bool busy = false;  // a worker holds its reader
    bool done = false;  // the file is read (or failed)
    std::unique_ptr<TFRecordReader> reader;
    std::deque<Row> rows;
    Status error;  // delivered after the rows before it
  };

  const RecordPipeline& pipeline;
  std::vector<std::string> files;  // this epoch's order
  std::mt19937_64 rng;             // the shuffle buffer's
  std::mt19937_64 negatives_rng;   // the sampled negatives'

  std::mutex mutex;
  std::condition_variable work;     // workers: a slot may need reading
  std::condition_variable filled;   // assembler: rows arrived
  std::condition_variable batches;  // ready batches, or room for one
  std::vector<Slot> slots;
  std::size_t next_file = 0;
  std::size_t cursor = 0;  // the slot whose turn it is
  // Rows taken in interleave order that the assembler has not yet used,
  // and rows it has used (its own: no lock), which take() hands to the
  // workers as `spare` to parse into and sampled negatives are copied
  // into: rows are reused, not allocated once a record. Both are bounded
  // (a row used while enough are kept is freed).
  std::deque<Row> taken;
  std::vector<Row> used, spare;
  std::deque<Batch> ready;
  bool finished = false;
  Status failure;
  bool stop = false;
  std::atomic<uint64_t> skipped{0};
  std::string skip_reason;
  std::vector<std::thread> workers;
  std::thread assembler;

  Epoch(const RecordPipeline& owner, uint32_t epoch)
      : pipeline(owner),
        files(owner.shard_files_),
        rng(buffer_rng(owner.options_.seed, epoch, owner.options_.shard_index)),
        negatives_rng(systole::negatives_rng(owner.options_.seed, epoch, owner.options_.shard_index)) {
    const RecordPipelineOptions& options = owner.options_;
    if (options.shuffle_buffer > 0) {
      std::mt19937_64 order = file_order_rng(options.seed, epoch);
      std::shuffle(files.begin(), files.end(), order);
    }
    slots.resize(std::max<std::size_t>(1, std::min<std::size_t>(options.cycle_length, files.size())));
    for (Slot& slot : slots)
      if (next_file < files.size()) slot.file = int64_t(next_file++);
    const uint32_t threads =
        std::max<uint32_t>(1, std::min<uint32_t>(options.threads, uint32_t(slots.size())));
    for (uint32_t t = 0; t < threads; ++t)
      workers.emplace_back([this, t, threads] {
        yield_to_compute();
        guarded("a record reader", [&] { read(t, threads); });
      });
    assembler = std::thread([this] {
      yield_to_compute();
      guarded("the batch assembler", [&] { assemble(); });
    });
  }

  ~Epoch() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    work.notify_all();
    filled.notify_all();
    batches.notify_all();
    for (std::thread& worker : workers) worker.join();
    assembler.join();
  }

  // Runs one thread's part. An exception (std::bad_alloc, a library's)
  // ends the epoch with an error that next() returns, and stops the other
  // threads, which would otherwise wait for this one forever.
  template <class Part>
  void guarded(const char* role, Part&& part) {
    Status status;
    try {
      part();
      return;
    } catch (...) {
      status = current_exception_status(role);
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (failure.ok()) failure = std::move(status);
      finished = true;
      stop = true;
    }
    work.notify_all();
    filled.notify_all();
    batches.notify_all();
  }

  void note_skip(const Status& status) {
    if (skipped++ == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      skip_reason = status.message();
    }
  }

  // Worker t of n: reads ahead in the slots s with s % n == t.
  void read(uint32_t t, uint32_t n) {
    const RecordPipelineOptions& options = pipeline.options_;
    std::unique_lock<std::mutex> lock(mutex);
    std::string record;
    std::vector<Row> blanks;
    while (!stop) {
      Slot* slot = nullptr;
      for (std::size_t s = t; s < slots.size() && !slot; s += n) {
        Slot& candidate = slots[s];
        if (candidate.file >= 0 && !candidate.busy && !candidate.done && candidate.rows.size() < kSlotDepth)
          slot = &candidate;
      }
      if (!slot) {
        work.wait(lock);
        continue;
      }
      slot->busy = true;
      const std::string path = files[std::size_t(slot->file)];
      std::unique_ptr<TFRecordReader> reader = std::move(slot->reader);
      // Rows the assembler is done with, to parse into (no allocation).
      while (blanks.size() < kChunk && !spare.empty()) {
        blanks.push_back(std::move(spare.back()));
        spare.pop_back();
      }
      lock.unlock();

      std::vector<Row> rows;
      Status error;
      bool done = false;
      if (!reader) {
        auto opened = TFRecordReader::open(path, pipeline.options_.compression);
        if (opened.ok())
          reader = std::make_unique<TFRecordReader>(std::move(opened).value());
        else {
          error = opened.status();
          done = true;
        }
      }
      while (!done && rows.size() < kChunk) {
        const uint64_t index = reader->records_read(), at = reader->offset();
        auto more = reader->next(record);
        Status status = more.status();
        if (status.ok() && !*more) {
          done = true;
          break;
        }
        Row row;
        if (!blanks.empty()) {
          row = std::move(blanks.back());
          blanks.pop_back();
        }
        row.resize(pipeline.example_values_ + pipeline.label_width_);
        if (status.ok()) {
          status = pipeline.parse_row(record, row);
          if (!status.ok())
            status = Status(status.code(), path + ": record " + std::to_string(index) + " at byte " +
                                               std::to_string(at) + ": " + status.message());
        }
        if (status.ok()) {
          rows.push_back(std::move(row));
        } else if (options.skip_corrupt && status.code() == StatusCode::kDataLoss) {
          note_skip(status);
        } else {
          error = status;
          done = true;
        }
      }

      lock.lock();
      slot->busy = false;
      for (Row& row : rows) slot->rows.push_back(std::move(row));
      if (done) {
        slot->done = true;
        slot->error = error;
        slot->reader.reset();
      } else {
        slot->reader = std::move(reader);
      }
      filled.notify_all();
    }
  }

  // The next row in interleave order (this shard's share of it when every
  // shard reads every file); false at the end of the input. Rows come
  // from `taken`, which take() refills.
  Result<bool> next_row(Row& row, uint64_t& position) {
    while (taken.empty()) {
      auto more = take(position);
      if (!more.ok() || !*more) return more;
    }
    row = std::move(taken.front());
    taken.pop_front();
    return true;
  }

  // Moves the rows that are next in interleave order and already parsed
  // into `taken`, under one lock: at least one row (waiting for it), and on
  // while the slot whose turn it is has one ready, up to kChunk; false at
  // the end of the input.
  Result<bool> take(uint64_t& position) {
    const RecordPipelineOptions& options = pipeline.options_;
    std::unique_lock<std::mutex> lock(mutex);
    bool woken = false;      // a worker is to be told that a slot has room
    std::size_t passed = 0;  // rows taken off the slots (some another shard's)
    // The readers get back what they will parse into before the assembler
    // next comes (the rest stays for sampled negatives, or goes).
    while (!used.empty() && spare.size() < kChunk * (workers.size() + 1)) {
      spare.push_back(std::move(used.back()));
      used.pop_back();
    }
    for (;;) {
      if (stop) return false;
      bool active = false;
      for (const Slot& slot : slots) active = active || slot.file >= 0;
      if (!active) return !taken.empty();
      Slot& slot = slots[cursor];
      if (slot.file < 0) {
        cursor = (cursor + 1) % slots.size();
        continue;
      }
      if (slot.rows.empty() && !slot.done) {
        if (!taken.empty() || passed >= kChunk) break;  // what is here goes first
        if (woken) work.notify_all();
        woken = false;
        filled.wait(lock, [&] { return stop || !slot.rows.empty() || slot.done; });
        continue;
      }
      if (!slot.rows.empty()) {
        Row row = std::move(slot.rows.front());
        slot.rows.pop_front();
        // The slot's worker reads again once half its rows are gone (not
        // for every row: each wake-up is a context switch).
        if (slot.rows.size() == kSlotDepth / 2) woken = true;
        cursor = (cursor + 1) % slots.size();
        const uint64_t at = position++;
        if (pipeline.by_file_ || at % options.shard_count == options.shard_index)
          taken.push_back(std::move(row));
        if (++passed >= kChunk && !taken.empty()) break;
        continue;
      }
      if (!slot.error.ok()) {
        if (!taken.empty()) break;  // the rows before the error first
        return slot.error;
      }
      // The file is finished: the next file takes its place in the cycle.
      slot.done = false;
      slot.file = next_file < files.size() ? int64_t(next_file++) : -1;
      woken = true;
    }
    if (woken) work.notify_all();
    return true;
  }

  // Shuffle buffer, batches, prefetch.
  void assemble() {
    const RecordPipelineOptions& options = pipeline.options_;
    const uint32_t values = pipeline.example_values_;
    uint64_t position = 0, emitted = 0;
    Batch batch;
    auto deliver = [&](Batch&& full) {
      std::unique_lock<std::mutex> lock(mutex);
      batches.wait(lock, [&] { return stop || ready.size() < options.prefetch; });
      if (stop) return false;
      ready.push_back(std::move(full));
      batches.notify_all();
      return true;
    };
    // skip_corrupt: the epoch's first rows (a batch of them), which stand
    // in for skipped records at its end, so that the epoch still has its
    // planned batches (every shard of a job the same number).
    std::vector<Row> stand_ins;
    auto add = [&](Row&& row) {
      if (options.skip_corrupt && stand_ins.size() < options.batch_size) stand_ins.push_back(row);
      if (batch.size == 0) {
        batch.values.reserve(std::size_t(options.batch_size) * values);
        batch.labels.reserve(std::size_t(options.batch_size) * pipeline.label_width_);
      }
      batch.values.insert(batch.values.end(), row.begin(), row.begin() + values);
      batch.labels.insert(batch.labels.end(), row.begin() + values, row.end());
      batch.label_width = pipeline.label_width_;
      if (used.size() < kChunk * (2 + options.negatives)) used.push_back(std::move(row));
      if (++batch.size < options.batch_size) return true;
      ++emitted;
      if (!deliver(std::move(batch))) return false;
      batch = Batch();
      return emitted < pipeline.batches_;
    };
    auto finish = [&](Status status) {
      std::lock_guard<std::mutex> lock(mutex);
      if (failure.ok()) failure = status;  // the first error stays
      finished = true;
      batches.notify_all();
    };

    if (pipeline.batches_ == 0) return finish(ok_status());
    std::vector<Row> buffer;
    Row row;
    bool more = true;
    for (;;) {
      if (more && buffer.size() < std::max<std::size_t>(1, options.shuffle_buffer)) {
        auto got = next_row(row, position);
        if (!got.ok()) return finish(got.status());
        more = *got;
        if (!more) continue;
        for (uint32_t n = 0; n < options.negatives; ++n) {
          const std::vector<float>& pool = pipeline.negative_values_;
          Row negative;
          if (!used.empty()) {
            negative = std::move(used.back());
            used.pop_back();
          }
          negative.assign(row.begin(), row.end());
          negative[pipeline.negative_offset_] = pool[std::size_t(negatives_rng() % pool.size())];
          negative[values] = 0.0f;
          buffer.push_back(std::move(negative));
        }
        buffer.push_back(std::move(row));
        continue;
      }
      if (buffer.empty()) break;
      // A uniformly chosen element leaves; the next row takes its place.
      const std::size_t j = options.shuffle_buffer > 0 ? std::size_t(rng() % buffer.size()) : 0;
      Row out = std::move(buffer[j]);
      buffer[j] = std::move(buffer.back());
      buffer.pop_back();
      if (!add(std::move(out))) return finish(ok_status());
    }
    for (std::size_t i = 0; skipped > 0 && emitted < pipeline.batches_ && !stand_ins.empty(); ++i)
      if (!add(Row(stand_ins[i % stand_ins.size()]))) return finish(ok_status());
    if (batch.size > 0 && !options.drop_remainder && emitted < pipeline.batches_) {
      ++emitted;
      if (!deliver(std::move(batch))) return finish(ok_status());
    }
    finish(ok_status());
  }
};

Status RecordPipeline::parse_row(const std::string& record, std::vector<float>& row) const {
  float* out = row.data();
  const float* labels = out + example_values_;
  if (rows_as_schema_) {
    // The row is the schema's row: parsed in place, nothing copied.
    SYSTOLE_RETURN_IF_ERROR(schema_.parse(record, out));
    out += example_values_;
  } else {
    thread_local std::vector<float> values;
    values.resize(schema_.row_size());
    SYSTOLE_RETURN_IF_ERROR(schema_.parse(record, values.data()));
    for (std::size_t feature : input_features_) {
      const float* first = values.data() + schema_.offset(feature);
      out = std::copy(first, first + schema_.features()[feature].elements(), out);
    }
    labels = values.data() + schema_.offset(label_feature_);
  }
  const std::string& name = schema_.features()[label_feature_].name;
  // Which label of the record, for errors only (this runs per record).
  auto which = [&](uint32_t i) { return label_width_ > 1 ? "label " + std::to_string(i) + ", " : "label "; };
  for (uint32_t i = 0; i < label_width_; ++i) {
    const float label = labels[i];
    if (options_.negatives > 0 && label != 1.0f)
      return Status(StatusCode::kInvalidArgument, "feature '" + name + "': " + which(i) +
                                                      std::to_string(label) +
                                                      " in a file of positives (negatives are sampled)");
    if (!(label >= 0 && label < float(classes_)) || label != float(int64_t(label)))
      return Status(StatusCode::kInvalidArgument, "feature '" + name + "': " + which(i) +
                                                      std::to_string(label) + " is not a class in [0, " +
                                                      std::to_string(classes_) + ")");
    out[i] = label;
  }
  return ok_status();
}

Result<std::unique_ptr<RecordPipeline>> RecordPipeline::create(const ExampleSchema& schema,
                                                               const ExampleColumns& columns,
                                                               const RecordPipelineOptions& options) {
  if (options.files.empty()) return Status(StatusCode::kInvalidArgument, "no input files");
  if (options.shard_count == 0 || options.shard_index >= options.shard_count)
    return Status(StatusCode::kInvalidArgument, "shard " + std::to_string(options.shard_index) + " of " +
                                                    std::to_string(options.shard_count) + " does not exist");
  if (options.batch_size == 0 || options.cycle_length == 0 || options.threads == 0 || options.prefetch == 0)
    return Status(StatusCode::kInvalidArgument,
                  "batch_size, cycle_length, threads and prefetch must be >= 1");
  if (columns.inputs.empty()) return Status(StatusCode::kInvalidArgument, "no input features named");
  if (columns.classes == 0 || columns.classes > 256)
    return Status(StatusCode::kInvalidArgument, "classes must be in [1, 256]");
  std::unique_ptr<RecordPipeline> pipeline(new RecordPipeline());
  pipeline->schema_ = schema;
  pipeline->options_ = options;
  pipeline->classes_ = columns.classes;
  uint64_t values = 0;
  for (const std::string& name : columns.inputs) {
    auto index = schema.find(name);
    if (!index.ok()) return Status(index.status().code(), "inputs: " + index.status().message());
    pipeline->input_features_.push_back(*index);
    values += schema.features()[*index].elements();
  }
  if (values > (1u << 28))
    return Status(StatusCode::kInvalidArgument, "inputs: more than 2^28 values per example");
  pipeline->example_values_ = uint32_t(values);
  if (columns.inputs.size() == 1) {
    for (uint64_t d : schema.features()[pipeline->input_features_[0]].shape)
      pipeline->example_shape_.push_back(uint32_t(d));
  }
  if (pipeline->example_shape_.empty()) pipeline->example_shape_ = {uint32_t(values)};
  if (options.negatives > 0) {
    auto it = std::find(columns.inputs.begin(), columns.inputs.end(), options.negative_feature);
    if (it == columns.inputs.end())
      return Status(StatusCode::kInvalidArgument,
                    "negatives: feature '" + options.negative_feature + "' is not one of the inputs");
    const std::size_t position = std::size_t(it - columns.inputs.begin());
    for (std::size_t before = 0; before < position; ++before)
      pipeline->negative_offset_ += uint32_t(schema.features()[pipeline->input_features_[before]].elements());
    if (schema.features()[pipeline->input_features_[position]].elements() != 1)
      return Status(StatusCode::kInvalidArgument,
                    "negatives: feature '" + options.negative_feature + "' is not a scalar");
  }
  auto label = schema.find(columns.label);
  if (!label.ok()) return Status(label.status().code(), "label: " + label.status().message());
  const uint64_t label_width = schema.features()[*label].elements();
  if (label_width != 1 && options.negatives > 0)
    return Status(StatusCode::kInvalidArgument,
                  "label: feature '" + columns.label + "' is not a scalar (sampled negatives need one)");
  if (label_width > (1u << 16))
    return Status(StatusCode::kInvalidArgument,
                  "label: feature '" + columns.label + "' holds more than 65536 labels");
  pipeline->label_feature_ = *label;
  pipeline->label_width_ = uint32_t(label_width);
  // The inputs in the schema's order and the label after them, nothing
  // else: a record parses straight into its row.
  std::vector<std::size_t> in_order(pipeline->input_features_.size());
  std::iota(in_order.begin(), in_order.end(), std::size_t(0));
  pipeline->rows_as_schema_ = pipeline->input_features_ == in_order && *label == in_order.size() &&
                              schema.features().size() == in_order.size() + 1;

  // Count every file's records (all shards need the same plan) and, for
  // sampled negatives, gather the replaced feature's values (all shards draw
  // from the same ones).
  for (const std::string& file : options.files) {
    auto count = options.negatives > 0 ? pipeline->gather_negative_values(file)
                                       : count_tfrecords(file, options.compression);
    if (!count.ok()) return count.status();
    pipeline->file_records_.push_back(*count);
    pipeline->total_records_ += *count;
  }
  std::vector<float>& pool = pipeline->negative_values_;
  std::sort(pool.begin(), pool.end());
  pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  pipeline->plan();
  return pipeline;
}

Result<std::unique_ptr<RecordPipeline>> RecordPipeline::shard(uint32_t index, uint32_t count,
                                                              uint32_t batch_size,
                                                              uint32_t shuffle_buffer) const {
  if (count == 0 || index >= count)
    return Status(StatusCode::kInvalidArgument,
                  "shard " + std::to_string(index) + " of " + std::to_string(count) + " does not exist");
  if (batch_size == 0) return Status(StatusCode::kInvalidArgument, "batch_size must be >= 1");
  std::unique_ptr<RecordPipeline> pipeline(new RecordPipeline());
  pipeline->schema_ = schema_;
  pipeline->options_ = options_;
  pipeline->options_.shard_index = index;
  pipeline->options_.shard_count = count;
  pipeline->options_.batch_size = batch_size;
  pipeline->options_.shuffle_buffer = shuffle_buffer;
  pipeline->input_features_ = input_features_;
  pipeline->label_feature_ = label_feature_;
  pipeline->label_width_ = label_width_;
  pipeline->classes_ = classes_;
  pipeline->example_values_ = example_values_;
  pipeline->rows_as_schema_ = rows_as_schema_;
  pipeline->example_shape_ = example_shape_;
  pipeline->negative_offset_ = negative_offset_;
  pipeline->negative_values_ = negative_values_;
  pipeline->file_records_ = file_records_;
  pipeline->total_records_ = total_records_;
  pipeline->plan();
  return pipeline;
}

void RecordPipeline::plan() {
  const RecordPipelineOptions& options = options_;
  const uint32_t shards = options.shard_count;
  by_file_ = shards > 1 && options.files.size() % shards == 0;
  uint64_t smallest = UINT64_MAX;
  for (uint32_t s = 0; s < shards; ++s) {
    uint64_t records = 0;
    if (by_file_) {
      for (std::size_t f = s; f < file_records_.size(); f += shards) records += file_records_[f];
    } else {
      records = total_records_ / shards + (s < total_records_ % shards ? 1 : 0);
    }
    smallest = std::min(smallest, records);
    if (s == options.shard_index) shard_records_ = records;
  }
  shard_files_.clear();
  for (std::size_t f = 0; f < options.files.size(); ++f)
    if (!by_file_ || f % shards == options.shard_index) shard_files_.push_back(options.files[f]);
  const uint64_t per_record = 1 + uint64_t(options.negatives);
  batches_ = options.drop_remainder
                 ? smallest * per_record / options.batch_size
                 : (shard_records_ * per_record + options.batch_size - 1) / options.batch_size;
}

Result<uint64_t> RecordPipeline::gather_negative_values(const std::string& file) {
  auto reader = TFRecordReader::open(file, options_.compression);
  if (!reader.ok()) return reader.status();
  std::string record;
  Row row(example_values_ + label_width_);
  for (;;) {
    const uint64_t index = reader->records_read(), at = reader->offset();
    auto more = reader->next(record);
    Status status = more.status();
    if (status.ok() && !*more) return reader->records_read();
    if (status.ok()) status = parse_row(record, row);
    // A frame error ends the file whatever skip_corrupt says (create()
    // counts frames); a record's bad data is skipped as next() will skip it.
    if (options_.skip_corrupt && status.code() == StatusCode::kDataLoss && reader->records_read() > index)
      continue;
    if (!status.ok())
      return Status(status.code(), file + ": record " + std::to_string(index) + " at byte " +
                                       std::to_string(at) + ": " + status.message());
    negative_values_.push_back(row[negative_offset_]);
  }
}

RecordPipeline::~RecordPipeline() = default;

void RecordPipeline::start_epoch(uint32_t epoch) {
  epoch_.reset();
  const bool followed = following_ && epoch == epoch_number_ + 1;
  delivered_ = 0;
  epoch_number_ = epoch;
  if (followed) {
    epoch_ = std::move(following_);
    return;
  }
  following_.reset();
  epoch_ = std::make_unique<Epoch>(*this, epoch);
}

Result<bool> RecordPipeline::next(Batch& batch) {
  if (!epoch_) return Status(StatusCode::kInternal, "RecordPipeline::next before start_epoch");
  Epoch& epoch = *epoch_;
  std::unique_lock<std::mutex> lock(epoch.mutex);
  epoch.batches.wait(lock, [&] { return !epoch.ready.empty() || epoch.finished; });
  if (!epoch.ready.empty()) {
    batch = std::move(epoch.ready.front());
    epoch.ready.pop_front();
    epoch.batches.notify_all();
    lock.unlock();
    // The epoch's last batch: the next epoch starts reading (and filling
    // its shuffle buffer) while the caller validates, and start_epoch
    // takes it over. Its order depends on its number only.
    if (++delivered_ == batches_ && !following_)
      following_ = std::make_unique<Epoch>(*this, epoch_number_ + 1);
    return true;
  }
  if (!epoch.failure.ok()) return epoch.failure;
  return false;
}

uint64_t RecordPipeline::skipped() const { return epoch_ ? epoch_->skipped.load() : 0; }

std::string RecordPipeline::first_skip_reason() const {
  if (!epoch_) return {};
  std::lock_guard<std::mutex> lock(epoch_->mutex);
  return epoch_->skip_reason;
}

Result<Dataset> load_tfrecord_dataset(const std::vector<std::string>& files, const ExampleSchema& schema,
                                      const ExampleColumns& columns, Compression compression) {
  RecordPipelineOptions options;
  options.files = files;
  options.compression = compression;
  options.cycle_length = 1;  // file order, then record order
  options.threads = 1;
  options.batch_size = 4096;
  options.drop_remainder = false;
  auto pipeline = RecordPipeline::create(schema, columns, options);
  if (!pipeline.ok()) return pipeline.status();
  Dataset data;
  data.features = (*pipeline)->example_values();
  data.shape = (*pipeline)->example_shape();
  data.classes = columns.classes;
  data.label_width = (*pipeline)->label_width();
  (*pipeline)->start_epoch(0);
  Batch batch;
  for (;;) {
    auto more = (*pipeline)->next(batch);
    if (!more.ok()) return more.status();
    if (!*more) break;
    data.values.insert(data.values.end(), batch.values.begin(), batch.values.end());
    data.labels.insert(data.labels.end(), batch.labels.begin(), batch.labels.end());
    data.examples += batch.size;
  }
  return data;
}

}  // namespace systole
