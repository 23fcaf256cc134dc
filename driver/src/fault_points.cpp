// SPDX-License-Identifier: Apache-2.0
// The fault-injection points' rules and their counting.
#include "systole/fault_points.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace systole {
namespace {

constexpr struct {
  FaultPoint point;
  const char* name;
  bool can_fail;  // takes the action error (output.renamed has nothing left to fail)
} kPoints[] = {
    {FaultPoint::kOutputFsync, "output.fsync", true},
    {FaultPoint::kOutputRename, "output.rename", true},
    {FaultPoint::kOutputRenamed, "output.renamed", false},
    {FaultPoint::kRecordRead, "tfrecord.read", true},
    {FaultPoint::kBatchProduce, "batch_stream.produce", true},
    {FaultPoint::kTrainStep, "train.step", true},
};

struct Rule {
  FaultPoint point;
  std::string subject;  // empty: any
  uint64_t nth = 1;
  bool kill = false;
  uint64_t passed = 0;  // matching passages so far
};

std::atomic<bool> armed{false};
std::mutex mutex;
std::vector<Rule> rules;  // guarded by mutex

std::string point_names() {
  std::string names;
  for (const auto& entry : kPoints) names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

Result<Rule> parse_rule(std::string_view text, const std::string& origin) {
  auto bad = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument, origin + ": '" + std::string(text) + "': " + why);
  };
  const std::size_t equals = text.rfind('=');
  if (equals == std::string_view::npos) return bad("a rule is POINT[:SUBJECT][@N]=ACTION");
  Rule rule;
  const std::string_view action = text.substr(equals + 1);
  if (action == "kill")
    rule.kill = true;
  else if (action != "error")
    return bad("the action '" + std::string(action) + "' is neither kill nor error");
  std::string_view where = text.substr(0, equals);
  if (const std::size_t at = where.rfind('@'); at != std::string_view::npos) {
    const std::string_view count = where.substr(at + 1);
    const auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), rule.nth);
    if (error != std::errc() || end != count.data() + count.size() || rule.nth == 0)
      return bad("'@" + std::string(count) + "' is not a passage number from 1 to 2^64-1");
    where = where.substr(0, at);
  }
  std::string_view name = where;
  if (const std::size_t colon = where.find(':'); colon != std::string_view::npos) {
    name = where.substr(0, colon);
    rule.subject = std::string(where.substr(colon + 1));
    if (rule.subject.empty()) return bad("an empty subject after ':'");
  }
  for (const auto& entry : kPoints)
    if (name == entry.name) {
      if (!rule.kill && !entry.can_fail) return bad(std::string(entry.name) + " takes the action kill only");
      rule.point = entry.point;
      return rule;
    }
  return bad("no fault point '" + std::string(name) + "' (the points: " + point_names() + ")");
}

}  // namespace

const char* fault_point_name(FaultPoint point) {
  for (const auto& entry : kPoints)
    if (entry.point == point) return entry.name;
  return "?";
}

Status arm_faults(std::string_view spec, const std::string& origin) {
  std::vector<Rule> parsed;
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    auto rule = parse_rule(spec.substr(0, comma), origin);
    if (!rule.ok()) return rule.status();
    parsed.push_back(std::move(rule).value());
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
  }
  std::lock_guard<std::mutex> lock(mutex);
  rules = std::move(parsed);
  armed.store(!rules.empty(), std::memory_order_relaxed);
  return ok_status();
}

Status arm_faults_from_environment() {
  const char* spec = std::getenv("SYSTOLE_FAULTS");
  return spec ? arm_faults(spec, "SYSTOLE_FAULTS") : ok_status();
}

Status fault_point(FaultPoint point, std::string_view subject) {
  if (!armed.load(std::memory_order_relaxed)) return ok_status();
  std::lock_guard<std::mutex> lock(mutex);
  for (Rule& rule : rules) {
    if (rule.point != point || (!rule.subject.empty() && rule.subject != subject)) continue;
    if (++rule.passed != rule.nth) continue;
    if (rule.kill) {
      ::kill(::getpid(), SIGKILL);  // delivered before kill() returns: it cannot be blocked
      for (;;) ::pause();
    }
    std::string where = fault_point_name(point);
    if (!subject.empty()) where += " (" + std::string(subject) + ")";
    return Status(StatusCode::kUnavailable, "injected fault at " + where);
  }
  return ok_status();
}

std::string_view fault_subject(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace systole
