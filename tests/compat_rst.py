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

"""Shared by the generated compatibility pages (Nova and Glance releases).

Tests record one JSON file per measured outcome into a results directory;
a small script per page loads them (:func:`load_results`) and renders an
RST ``list-table`` (:func:`list_table`).  Nothing is inferred: a page lists
only what a test run recorded.
"""

import glob
import json
import os


def write_result(directory, name, result):
    """Record one outcome as ``<directory>/<name>.json``.

    :param directory: the results directory (created if missing).
    :param name: the file name without ``.json``.
    :param result: a JSON-serialisable dict.
    :returns: the path written.
    """
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, '%s.json' % name)
    with open(path, 'w') as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
    return path


def load_results(directory):
    """Read every recorded outcome of a results directory.

    :param directory: the directory the tests wrote to.
    :returns: a list of dicts, in file name order (empty if none).
    """
    results = []
    for path in sorted(glob.glob(os.path.join(directory, '*.json'))):
        with open(path) as fh:
            results.append(json.load(fh))
    return results


def list_table(rows, widths):
    """Render an RST ``list-table`` whose first row is the header.

    :param rows: a list of rows, each a sequence of cell strings.
    :param widths: the relative column widths.
    :returns: the RST text (ends with an empty line).
    """
    out = ['.. list-table::', '   :header-rows: 1',
           '   :widths: %s' % ' '.join(str(w) for w in widths), '']
    for row in rows:
        for index, cell in enumerate(row):
            prefix = '   * - ' if index == 0 else '     - '
            out.append('%s%s' % (prefix, str(cell).replace('*', r'\*')))
    out.append('')
    return '\n'.join(out)


def write_page(argv, usage, render, key, what, runs_hint):
    """The ``main`` of a compatibility-table generator.

    :param argv: ``[RESULTS_DIR, OUTPUT]``.
    :param usage: printed when ``argv`` is not two paths.
    :param render: results -> the page's text.
    :param key: result field that names the release (``'nova'``...).
    :param what: plural noun for the summary line (``'Nova versions'``).
    :param runs_hint: the tox envs that record results, for the message
        when there are none.
    :returns: the exit code (2 usage, 1 no results, 0 written).
    """
    if len(argv) != 2:
        print(usage)
        return 2
    source, output = argv
    results = load_results(source)
    if not results:
        print('no results in %s: run %s first' % (source, runs_hint))
        return 1
    with open(output, 'w') as fh:
        fh.write(render(results))
    print('%s: %d outcomes from %d %s' % (
        output, len(results), len({r[key] for r in results}), what))
    return 0
