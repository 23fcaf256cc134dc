// SPDX-License-Identifier: Apache-2.0
// The run library's YAML configuration (accel_train's, systole.Model's):
// any text ends in a configuration or in an error naming the file; the
// same text given in memory (as the Python
// package gives a dict) ends the same way, its errors naming the source
// instead; a configuration that loads is then validated, and when valid,
// its job settings and input schema are derived, and its --print-config
// text reads back to the same text. The seeds include keys given twice and
// numbers out of every range.
#include "fuzz_input.h"
#include "systole/run/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace systole;
  const std::string path = fuzz::write_file("train.yaml", {reinterpret_cast<const char*>(data), size});
  RunConfig config, in_memory;
  const Status loaded = load_run_config(path, config);
  const Status parsed = parse_run_config({reinterpret_cast<const char*>(data), size}, "config", in_memory);
  if (loaded.ok() != parsed.ok() ||
      (!loaded.ok() && loaded.message().substr(path.size()) != parsed.message().substr(6)))
    fuzz::fail("the file and the same text in memory disagree: " + loaded.to_string() + " / " +
               parsed.to_string());
  if (loaded.ok() && config_yaml(config) != config_yaml(in_memory))
    fuzz::fail("the file and the same text in memory give different configurations");
  if (!loaded.ok()) {
    if (loaded.message().find("train.yaml") == std::string::npos)
      fuzz::fail("the error does not name the file: " + loaded.to_string());
    return 0;
  }
  if (!validate_run_config(config).ok()) return 0;
  if (job_settings(config).empty()) fuzz::fail("a valid configuration without job settings");
  if (config.data_format == "tfrecord") (void)example_schema(config);
  const std::string printed = config_yaml(config);
  RunConfig reread;
  const Status again = load_run_config(fuzz::write_file("printed.yaml", printed), reread);
  if (!again.ok()) fuzz::fail("--print-config wrote a file that does not load: " + again.to_string());
  if (config_yaml(reread) != printed) fuzz::fail("--print-config does not round-trip:\n" + printed);
  return 0;
}
