// SPDX-License-Identifier: Apache-2.0
// Named fault-injection points: places in the library where a test makes
// the process fail as a real fault would, at exactly that place whatever
// the machine's load (FreeBSD's fail points, in small). Unarmed, a point
// costs one relaxed atomic load.
//
// A process arms them from a spec, "RULE[,RULE...]", each rule
//   POINT[:SUBJECT][@N]=ACTION
// POINT is a name from the table below; SUBJECT, where given, must equal
// what the point passes (the base name of the file it works on); the rule
// fires once, on the Nth passage that matches (default 1). ACTION is
//   kill   the process sends itself SIGKILL: a crash at that instant;
//   error  the operation fails there as an I/O error (EIO) would.
// The tools read the spec from the environment variable SYSTOLE_FAULTS at
// start and refuse one that names an unknown point or action, so that a
// misspelt rule cannot let a test pass without its fault.
#pragma once

#include <string>
#include <string_view>

#include "systole/status.h"

namespace systole {

enum class FaultPoint {
  kOutputFsync,    // output.fsync: an OutputFile's bytes are written, not yet synced
  kOutputRename,   // output.rename: synced under the temporary name, not yet renamed
  kOutputRenamed,  // output.renamed: the file is in place, nothing after it done (kill only)
  kRecordRead,     // tfrecord.read: a TFRecord reader reads from its file
  kBatchProduce,   // batch_stream.produce: BatchStream's producer assembles a batch
  kTrainStep,      // train.step: fit() finished a training step (its callbacks too)
};

const char* fault_point_name(FaultPoint point);

// Arms the rules of `spec` in place of any armed before ("" disarms).
// A malformed spec is kInvalidArgument naming `origin` and quoting the rule,
// and changes nothing.
Status arm_faults(std::string_view spec, const std::string& origin = "fault spec");

// arm_faults(getenv("SYSTOLE_FAULTS")), when it is set.
Status arm_faults_from_environment();

// Passes `point`. A rule that fires with kill does not return; with error
// it returns kUnavailable naming the point and the subject. Otherwise ok.
Status fault_point(FaultPoint point, std::string_view subject = {});

// The base name of `path`, the subject the file points pass.
std::string_view fault_subject(std::string_view path);

}  // namespace systole
