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
in its captured traceback, and the last lines of each ``errors in
<log>`` detail that the cloud tests attach (tests/cloud/base.py).  Where
only the tail of CI's output is kept, this is the part that says why.

Usage: ``python3 .ci/failures.py LOG``
"""

import re
import sys

WIDTH = 300
#: Lines shown of each ``errors in <log>`` detail: its last ones (where
#: oslo.log's traceback ends with the exception).
ERROR_LINES = 4
#: Lines of the exception shown (a MismatchError's values follow it).
RAISED_LINES = 3
#: ``{worker} <test id> [<seconds>s] ... <status>``; a class fixture's id
#: has a space (``setUpClass (tests.x.T)``); a skip has no time.
_RESULT = re.compile(r'^\{\d+\} (.+?)(?: \[[^\]]*\])? \.\.\. (\w+)\b')
_CAPTURED = re.compile(r'^Captured (.+):$')
#: Lines that end a test's block: stestr's totals, tox's own lines, the
#: CI's section headers.  (Not every unindented line: subunit-trace leaves
#: the second line of an exception's message unindented.)
_END = re.compile(r'^(=====|Totals$|== | {0,2}[\w.-]+: '
                  r'(exit|commands|OK|FAIL)\b)')
_TRACEBACK = 'Traceback (most recent call last):'
#: The first line of a raised exception: ``[module.]Name: message``, the
#: class name capitalised (not an annotated assignment, ``value: dict``).
_EXCEPTION = re.compile(r'^([A-Za-z_]\w*\.)*[A-Z]\w*:(\s|$)')


def failures(lines):
    """``[(test id, {detail name: [lines]})]`` for each failed test.

    A test's block ends at the next result line or at a line of stestr's
    totals, of tox or of the CI (:data:`_END`).
    """
    found = []
    current = None
    detail = None
    for line in lines:
        line = line.rstrip('\n')
        result = _RESULT.match(line)
        if result:
            current = detail = None
            if result.group(2) == 'FAILED':
                current = (result.group(1), {})
                found.append(current)
            continue
        if current is None:
            continue
        captured = _CAPTURED.match(line)
        if captured:
            detail = current[1].setdefault(captured.group(1), [])
        elif _END.match(line):
            current = detail = None
        elif detail is not None and not line.startswith('~~~'):
            detail.append(line)
    return found


def raised(traceback):
    """The first lines of the last exception of a traceback's text.

    After the last ``Traceback (most recent call last):`` (a chained
    exception's is the last), the first ``name: message`` line; subunit-
    trace indents code lines as much as it, so the shape decides.
    """
    lines = [line.strip() for line in traceback if line.strip()]
    if not lines:
        return ['(no traceback captured)']
    starts = [n for n, line in enumerate(lines) if line == _TRACEBACK]
    for n in range(starts[-1] + 1 if starts else 0, len(lines)):
        if _EXCEPTION.match(lines[n]):
            return lines[n:n + RAISED_LINES]
    return lines[-RAISED_LINES:]


def summary(found):
    """The printed lines: per test, its exception and its error lines.

    A test that failed the same way in several runs is shown once.
    """
    out = []
    seen = set()
    for test_id, details in found:
        lines = ['    ' + ' | '.join(
            line.strip() for line in raised(details.get('traceback', ()))
        )[:WIDTH]]
        for name in sorted(details):
            if name.startswith('errors in '):
                lines.append('    %s:' % name)
                shown = [line.strip() for line in details[name]
                         if line.strip()][-ERROR_LINES:]
                lines.extend('      ' + line[:WIDTH] for line in shown)
        key = (test_id, tuple(lines))
        if key not in seen:
            seen.add(key)
            out += [test_id] + lines
    return out


#: The heading tests/tempest_run.py prints before a failed run's service
#: errors; its section ends at the next ``== `` line.
_BOX_ERRORS = "== errors in the box's logs while the tests ran"
#: Lines shown of each log in such a section: its last ones.
BOX_LINES = 3


def box_errors(lines):
    """``[[line, ...], ...]``: each Tempest run's service error section.

    Per log (a ``name:`` line, then indented ERROR lines), the name and
    its last :data:`BOX_LINES` lines.
    """
    sections = []
    logs = current = None
    for line in lines:
        line = line.rstrip('\n')
        if line.startswith(_BOX_ERRORS):
            logs, current = {}, None
            sections.append(logs)
        elif logs is not None and line.startswith('== '):
            logs = current = None
        elif logs is not None and line.strip() not in ('', '(none)'):
            if not line.startswith(' '):
                current = logs.setdefault(line.strip(), [])
            elif current is not None:
                current.append(line.strip())
    out = []
    for logs in sections:
        shown = ['  %s' % name + ''.join(
            '\n      ' + line[:WIDTH] for line in tail[-BOX_LINES:])
            for name, tail in sorted(logs.items())]
        out.append(shown or ['  (none)'])
    return out


def main(argv):
    with open(argv[1], errors='replace') as fh:
        lines = fh.readlines()
    for line in summary(failures(lines)):
        print(line)
    for number, section in enumerate(box_errors(lines), 1):
        print("service errors of failed Tempest run %d (the last lines of "
              "each log):" % number)
        for line in section:
            print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
