# SPDX-License-Identifier: Apache-2.0
# Sourced by the command-line test scripts. Set `tool` first.
# expect CODE REGEX ARGS...: "$tool" ARGS exits with CODE and prints a line
# matching REGEX; counts into $passes and $failures.
passes=0 failures=0

expect() {
  local code=$1 regex=$2
  shift 2
  local output status
  output=$("$tool" "$@" 2>&1)
  status=$?
  if [[ $status -ne $code ]] || ! grep -qE -- "$regex" <<<"$output"; then
    echo "FAIL: $(basename "$tool") $* -> exit $status (want $code), output:"
    echo "$output" | sed 's/^/    /'
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}
