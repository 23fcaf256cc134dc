// SPDX-License-Identifier: Apache-2.0
// A table of factories by name, shared by the layer, optimizer, loss and
// metric registries: the built-in entries are added when the table is first
// used, a program adds its own at run time, and a name is taken once.
#pragma once

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "systole/layer.h"
#include "systole/status.h"

namespace systole {

template <class Factory>
class Registry {
 public:
  // `what` names the kind in errors ("layer type").
  Registry(const char* what, std::vector<std::pair<std::string, Factory>> builtins)
      : what_(what), entries_(std::move(builtins)) {}

  Status add(const std::string& name, Factory factory) {
    if (name.empty())
      return Status(StatusCode::kInvalidArgument, std::string("a ") + what_ + " needs a name");
    if (!factory)
      return Status(StatusCode::kInvalidArgument, std::string(what_) + " '" + name + "': no factory given");
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& entry : entries_)
      if (entry.first == name)
        return Status(StatusCode::kInvalidArgument,
                      std::string(what_) + " '" + name + "' is already registered");
    entries_.emplace_back(name, std::move(factory));
    return ok_status();
  }

  // The factory called `name`; an unknown name is an error listing the
  // known ones.
  Result<Factory> find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& entry : entries_)
      if (entry.first == name) return entry.second;
    std::string known;
    for (const auto& entry : entries_) known += (known.empty() ? "" : ", ") + entry.first;
    return Status(StatusCode::kInvalidArgument,
                  "unknown " + std::string(what_) + " '" + name + "' (expected one of " + known + ")");
  }

  // Names in registration order, the built-ins first.
  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> names;
    for (const auto& entry : entries_) names.push_back(entry.first);
    return names;
  }

 private:
  const char* what_;
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, Factory>> entries_;
};

// Makes what `config` names with a registry of factories that read their
// fields through LayerArgs (layers, losses, metrics); a field no factory
// read is an error.
template <class T, class Factory>
Result<std::unique_ptr<T>> make_from_config(const Registry<Factory>& registry, const LayerConfig& config) {
  auto factory = registry.find(config.type);
  if (!factory.ok()) return Status(factory.status().code(), "type: " + factory.status().message());
  LayerArgs args(config);
  auto made = (*factory)(args);
  if (!made.ok()) return made.status();
  if (!*made)
    return Status(StatusCode::kInvalidArgument, "type: the factory of '" + config.type + "' made nothing");
  SYSTOLE_RETURN_IF_ERROR(args.unknown_fields());
  return made;
}

}  // namespace systole
