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

"""The console script's exit statuses, refusals and warnings.

:data:`EXIT_CODES` is the one exit-status table (``--help``, README,
docs); every refusal is a :class:`CLIError` carrying its exit status;
:func:`warn` prints a warning once per command.
"""

from __future__ import annotations

import re
import sys
import typing as ty

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INPUT = 2
EXIT_UNREACHABLE = 3
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

#: Over the project's Glance quota (unified limits), whether the
#: preflight's usage read foresaw it (nothing created) or Glance's 413 said
#: so at the create or upload: neither bad input (the same request passes
#: once the limit is raised or usage freed) nor Glance unreachable.
QUOTA_EXIT = EXIT_FAILED


#: The one exit-status table (``--help``, README, docs).
EXIT_CODES = (
    (EXIT_OK, 'done (audit: nothing left unrepaired)'),
    (EXIT_FAILED, 'the operation failed: the snapshot was not activated '
                  '(also when over the project\'s Glance quota, found '
                  'before the create or by Glance), probe found the '
                  'identity cannot snapshot, or audit found problems it '
                  'did not repair'),
    (EXIT_INPUT, 'bad input or configuration: usage, the request, an '
                 'option, or a preflight refusal of the image record '
                 '(nothing was created)'),
    (EXIT_UNREACHABLE, 'cannot reach or authenticate: Keystone or Glance '
                       'unreachable, credentials refused, no image '
                       'endpoint, or the endpoint is not Glance'),
    (EXIT_SIGINT, 'interrupted (Ctrl-C): nothing is deleted mid-upload; '
                  'an image the snapshot leaves is named, and the same '
                  'request run again adopts it'),
    (EXIT_SIGTERM, 'terminated (SIGTERM), handled exactly like Ctrl-C'),
)


#: The warnings this command printed (``warning: <text>``), each once
#: whether the command printed it or a log record carried it
#: (:class:`nova_snapshot_ext.cmd.logs.ConsoleFormatter`).
WARNED: set[str] = set()


def warn(text: str) -> None:
    """Print ``warning: <text>`` on stderr, once per command."""
    if text in WARNED:
        return
    WARNED.add(text)
    print('warning: %s' % text, file=sys.stderr)


class CLIError(Exception):
    """An error the console script reports and exits with.

    :param message: one line for stderr (and the JSON ``error``).
    :param code: the exit status.
    :param details: extra JSON fields (e.g. ``left`` image ids).
    """

    def __init__(self, message: str, code: int = EXIT_INPUT,
                 **details: ty.Any):
        super().__init__(message)
        self.message = message
        self.code = code
        self.details = details


_LOCATION_INFO_RE = re.compile(
    r"(from )?LocationInfo\(location=<Locations\.(\w+): [^>]*>, "
    r"detail=(?:'([^']*)'|None)\)")


def clean_message(text: str) -> str:
    """Replace oslo.config's internal ``LocationInfo(...)`` reprs.

    ``from LocationInfo(location=<Locations.user: ...>, detail='/f.conf')``
    becomes ``in /f.conf``; without a file, the kind of place (``user``,
    ``command_line``...).
    """
    def _place(match: re.Match[str]) -> str:
        where = match.group(3) or match.group(2).replace('_', ' ')
        return ('in %s' % where) if match.group(1) else where
    return _LOCATION_INFO_RE.sub(_place, text)


#: Longest reason quoted from a library's exception (characters).
REASON_LIMIT = 300


def reason_of(err: BaseException) -> str:
    """One line of ``err``'s text, at most about :data:`REASON_LIMIT`.

    A longer text is cut at the last word boundary before the limit and
    says so (``[...]``): a word cut in half reads as a different word.
    """
    text = ' '.join(str(err).split())
    if len(text) > REASON_LIMIT:
        head = text[:REASON_LIMIT + 1]
        cut = head.rfind(' ')
        text = (head[:cut] if cut > 0 else text[:REASON_LIMIT]) + ' [...]'
    return text or type(err).__name__
