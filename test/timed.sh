#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The log compiler of every test (test/Makemodule.am): runs the test as
# given and ends its log with one line, "# wall: <seconds> s", so that
# .ci/run can print what each test cost without a harness of its own.
# The test's exit status is passed on unchanged (77 is automake's SKIP).
start=$(date +%s%N)
"$@"
rc=$?
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
printf '# wall: %d.%d s\n' $((ms / 1000)) $(((ms % 1000) / 100))
exit $rc
