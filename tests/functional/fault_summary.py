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

"""Summarise the cells written by ``tests/functional/test_faults.py``.

Usage: ``python -m tests.functional.fault_summary CELLS.jsonl`` (the file
``NOVA_SNAPSHOT_EXT_FAULTS_LOG`` named).  Prints counts per problem kind,
each failing cell on one line, and the concurrency rounds.  Exit status 1
when a cell or a round has a problem.
"""

import collections
import json
import sys


def summarise(lines):
    """Return (text, failed) for the JSON lines of a fault run."""
    cells, rounds = [], []
    for line in lines:
        line = line.strip()
        if line:
            item = json.loads(line)
            (rounds if 'round' in item else cells).append(item)
    kinds = collections.Counter()
    out = []
    failing = [c for c in cells if c['problems']]
    idle = [c for c in cells if not c['fired'] and c['cell'] != 'no-fault']
    for cell in cells:
        for problem in cell['problems']:
            kinds[problem.rsplit('_', 1)[0] if problem.startswith(
                'duplicates_') else problem] += 1
    duplicates = sum(int(p.rsplit('_', 1)[1]) for c in cells
                     for p in c['problems'] if p.startswith('duplicates_'))
    out.append('cells run: %d, passed: %d, failed: %d' % (
        len(cells), len(cells) - len(failing), len(failing)))
    out.append('cells whose fault never fired: %d (%s)' % (
        len(idle), ', '.join(sorted(c['cell'] for c in idle))))
    out.append('duplicate images after the retry (total): %d' % duplicates)
    for kind, n in sorted(kinds.items()):
        out.append('  %-40s %d cell(s)' % (kind, n))
    for cell in sorted(failing, key=lambda c: c['cell']):
        out.append('FAULTS: cell %s fails: %s (exit %s, retry exit %s)' % (
            cell['cell'], ', '.join(cell['problems']), cell['exit'],
            cell['retry_exit']))
    bad_rounds = 0
    for r in rounds:
        bad = (r['duplicates'] or r['deleted_good'] or
               r['unnamed_leftovers'] or r['tracebacks'])
        bad_rounds += bool(bad)
        out.append('round %(round)d (seed %(seed)d): %(faults)d faults, '
                   '%(ok)d ok, %(failed)d failed, duplicates %(duplicates)d, '
                   'deleted good %(deleted_good)d, unnamed leftovers '
                   '%(unnamed_leftovers)d, tracebacks %(tracebacks)d' % r)
    return '\n'.join(out), bool(failing) or bool(bad_rounds)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        with open(argv[0], encoding='utf-8') as f:
            text, failed = summarise(f)
    except OSError as err:
        print('no fault cells recorded: %s' % err)
        return 1
    print(text)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
