#!/usr/bin/env python3
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Why each test failed, in a few lines, for the end of CI's output.

Reads the stestr (subunit-trace) output of a CI run and prints, for
each ``... FAILED`` test: its id, the first lines of the last exception
in its captured traceback, and the first lines of each ``errors in
<log>`` detail that the cloud tests attach (tests/cloud/base.py).  Where
only the tail of CI's output is kept, this is the part that says why.

Usage: ``python3 .ci/failures.py LOG``
"""

import re
import sys

WIDTH = 300
ERROR_LINES = 4
#: Lines of the exception shown (a MismatchError's values follow it).
RAISED_LINES = 3
_RESULT = re.compile(r'^\{\d+\} (\S+) \[[0-9.]+s\] \.\.\. (\w+)')
_CAPTURED = re.compile(r'^Captured (.+):$')
#: The first line of a raised exception (``AssertionError: ...``).
_EXCEPTION = re.compile(r'^[A-Za-z_][\w.]*(Error|Exception|Failure|Exit)\b')


def failures(lines):
    """``[(test id, {detail name: [lines]})]`` for each failed test."""
    found = []
    current = None
    detail = None
    for line in lines:
        line = line.rstrip('\n')
        result = _RESULT.match(line)
        if result:
            current = None
            if result.group(2) == 'FAILED':
                current = (result.group(1), {})
                found.append(current)
            continue
        if current is None:
            continue
        captured = _CAPTURED.match(line)
        if captured:
            detail = current[1].setdefault(captured.group(1), [])
        elif line.startswith('=====') or line.startswith('Totals'):
            current = None
        elif detail is not None and line.strip() and \
                not line.startswith('~~~'):
            detail.append(line.strip())
    return found


def summary(found):
    """The printed lines: per test, its exception and its error lines."""
    out = []
    for test_id, details in found:
        out.append(test_id)
        traceback = details.get('traceback') or ['(no traceback captured)']
        raised = [n for n, line in enumerate(traceback)
                  if _EXCEPTION.match(line)]
        start = raised[-1] if raised else len(traceback) - 1
        out.append('    ' + ' | '.join(
            traceback[start:start + RAISED_LINES])[:WIDTH])
        for name in sorted(details):
            if name.startswith('errors in '):
                out.append('    %s:' % name)
                out.extend('      ' + line[:WIDTH]
                           for line in details[name][:ERROR_LINES])
    return out


def main(argv):
    with open(argv[1], errors='replace') as fh:
        for line in summary(failures(fh)):
            print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
