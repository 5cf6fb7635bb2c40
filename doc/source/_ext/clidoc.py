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

"""``.. cli-help:: [COMMAND]``: the console script's own ``--help``.

Runs the real parser (oslo.config + argparse) of ``nova-snapshot-ext`` and
inserts what ``nova-snapshot-ext [COMMAND] --help`` prints, so the CLI
reference cannot drift from the code.  The exit-status table is
``.. cli-exit-codes::``.
"""

import contextlib
import io
import os

from docutils import nodes
from docutils.parsers.rst import Directive


def _help(argv):
    from nova_snapshot_ext.cmd import main

    out = io.StringIO()
    old = os.environ.get('COLUMNS')
    os.environ['COLUMNS'] = '79'
    try:
        with contextlib.redirect_stdout(out):
            main.run(argv + ['--help'])
    finally:
        if old is None:
            os.environ.pop('COLUMNS', None)
        else:
            os.environ['COLUMNS'] = old
    return out.getvalue()


class CLIHelp(Directive):
    optional_arguments = 1
    has_content = False

    def run(self):
        text = _help(list(self.arguments))
        return [nodes.literal_block(text, text)]


class CLIExitCodes(Directive):
    has_content = False

    def run(self):
        from nova_snapshot_ext.cmd import checks

        table = nodes.table()
        group = nodes.tgroup(cols=2)
        table += group
        group += nodes.colspec(colwidth=10)
        group += nodes.colspec(colwidth=70)
        head = nodes.thead()
        group += head
        row = nodes.row()
        for title in ('exit status', 'meaning'):
            row += nodes.entry('', nodes.paragraph(text=title))
        head += row
        body = nodes.tbody()
        group += body
        for code, meaning in checks.EXIT_CODES:
            row = nodes.row()
            row += nodes.entry('', nodes.paragraph(text=str(code)))
            row += nodes.entry('', nodes.paragraph(text=meaning))
            body += row
        return [table]


class AuditKinds(Directive):
    has_content = False

    def run(self):
        from nova_snapshot_ext import audit

        items = nodes.definition_list()
        for kind, (meaning, fixable) in audit.KINDS.items():
            item = nodes.definition_list_item()
            item += nodes.term(text=kind)
            item += nodes.definition('', nodes.paragraph(
                text='%s (%s).' % (meaning, 'repaired by --fix' if fixable
                                   else 'reported only')))
            items += item
        return [items]


def setup(app):
    app.add_directive('cli-help', CLIHelp)
    app.add_directive('cli-exit-codes', CLIExitCodes)
    app.add_directive('audit-kinds', AuditKinds)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
