// SPDX-License-Identifier: Apache-2.0
// placement: device: the end of a training step on the card. Each replica's
// trainable values, their gradients and the optimizer's slots stay in its
// unit's memory; the units' gradients are summed there in replica order
// (across processes, after the earlier processes' sum), the optimizer's
// engine form updates the values there, and only what host layers read
// comes back. The trainer runs the passes; this class owns what the card
// keeps between them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "systole/driver.h"
#include "systole/matmul.h"
#include "systole/optimizer.h"
#include "systole/parameters.h"
#include "systole/strategy.h"

namespace systole {

class CardStep {
 public:
  // What one replica brings: the unit its products run on, its parameters
  // and its optimizer (they outlive the CardStep).
  struct Replica {
    DeviceMatmul* unit = nullptr;
    ParameterStore* store = nullptr;
    Optimizer* optimizer = nullptr;
  };

  // Allocates each replica's buffers on `units` (replica r on units[r]),
  // uploads the values and slots and has the units keep them. Null, with a
  // notice, when the units have no vector engine; null when the model has
  // no trainable parameters. An optimizer without an engine form keeps its
  // steps on the host (a notice says so).
  // The stores' parameters are the host's alone again.
  ~CardStep();
  CardStep(const CardStep&) = delete;
  CardStep& operator=(const CardStep&) = delete;

  static Result<std::unique_ptr<CardStep>> create(Device device, const std::vector<uint32_t>& units,
                                                  std::vector<Replica> replicas, Strategy& strategy,
                                                  const OptimizerConfig& optimizer,
                                                  std::vector<std::string>& notices);

  // Replica r's step after its backward pass, inside Strategy::run: the
  // gradients the host wrote go up, the replicas' are summed, the optimizer
  // runs, and the values host layers read come back.
  Status step(uint32_t r);
  // Uploads replica r's values and slots (after the host changed them:
  // restore).
  Status upload(uint32_t r);
  // Brings every replica's values and slots to the host when the host's
  // copy is behind; a failure is kept for take_sync_status().
  void sync_to_host() const;
  // The failure of the last sync_to_host, once (then ok).
  Status take_sync_status() { return std::exchange(sync_status_, ok_status()); }

 private:
  // What a replica keeps on its unit, spread over the unit's banks so that
  // an update's four streams use four of them: the values, its gradients
  // (with several replicas, its share of them is replaced by the share's
  // sum), and the optimizer's slots.
  struct Card {
    Buffer values, gradient;
    // Shared: its share of every replica's gradients, one row each,
    // share_stride_ floats apart, gathered before they are summed; across
    // processes after a first row for the earlier processes' sum.
    Buffer rows;
    std::vector<Buffer> slots;
  };

  CardStep(std::vector<Replica> replicas, Strategy& strategy)
      : replicas_(std::move(replicas)), strategy_(strategy) {}
  Status allocate(Device device, const std::vector<uint32_t>& units);
  // The elements of the values replica r updates: a share of them when its
  // unit's peers take the rest, else all.
  std::pair<std::size_t, std::size_t> share(uint32_t r) const;
  // Appends the work with which replica r's unit sums elements [from, to)
  // of its share of every replica's gradients, in replica order, into its
  // own gradients; after the earlier processes' sum in its first row when
  // `after_previous`.
  Status append_sum(uint32_t r, std::size_t from, std::size_t to, bool after_previous,
                    std::vector<spec::CommandRecord>& work) const;
  // The optimizer's engine step over replica r's share of the values.
  Status append_update(uint32_t r, std::vector<spec::CommandRecord>& work);
  // The others' shares of the values, copied from their units into r's.
  Status append_gather(uint32_t r, std::vector<spec::CommandRecord>& work) const;
  // Across processes: the job's sum through the card's units.
  Status chained_sum(uint32_t r);
  std::size_t count() const { return replicas_[0].store->trainable().size(); }

  std::vector<Replica> replicas_;
  std::vector<Card> cards_;
  Strategy& strategy_;
  // The optimizer runs on the card (it has an engine form); with several
  // replicas (one card) each updates its share and gathers the others'.
  bool update_on_card_ = false, shared_ = false;
  std::size_t share_stride_ = 0;  // the longest share, in whole beats
  uint32_t previous_row_ = 0;     // 1: shared across processes (Card::rows)
  std::vector<float> job_sum_;    // there, the job's sum on its way
  mutable bool host_behind_ = false;
  mutable Status sync_status_;
};

}  // namespace systole
