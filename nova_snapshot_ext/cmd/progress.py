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

"""Progress of a long listing on stderr, as OpenStack CLIs show it.

``glance image-download --progress`` and ``openstack image create
--progress`` draw one line that is rewritten in place (a carriage return,
no newline) while they work, on the terminal only.  :class:`Progress` does
the same for what ``audit`` reads: images read, pages, rate, at most once
per :data:`INTERVAL_S`, then one final line.  On a stream that is not a
terminal (``--progress`` into a file or a pipe) every update is a line of
its own, so a log keeps them.

When it is shown is :func:`wanted`'s decision (one home): on a terminal
with text output unless ``--no-progress``; never with ``--format json``
or into a file or a pipe unless ``--progress`` asks.
"""

from __future__ import annotations

import time
import typing as ty

#: Seconds between two progress updates (the final line is always said).
INTERVAL_S = 1.0

#: ``--progress`` / ``--no-progress`` / neither, as the parser stores it.
ALWAYS = True
NEVER = False
AUTO = None


def wanted(asked: bool | None, output_format: str,
           stream: ty.TextIO) -> bool:
    """Whether progress is shown.

    :param asked: :data:`ALWAYS` (``--progress``), :data:`NEVER`
        (``--no-progress``) or :data:`AUTO` (neither).
    :param output_format: ``--format`` (``text`` or ``json``).
    :param stream: where progress would go (stderr).
    :returns: ``asked`` when given; otherwise true only for text output
        on a terminal (a JSON reader or a log file gets the report alone).
    """
    if asked is not None:
        return bool(asked)
    isatty = getattr(stream, 'isatty', None)
    return output_format != 'json' and bool(isatty and isatty())


def thousands(number: int) -> str:
    """``12345`` -> ``12,345``."""
    return '{:,}'.format(number)


class Progress:
    """Images read so far, written to ``stream`` at most once a second.

    :param stream: where to write (stderr).
    :param label: the line's prefix, e.g. ``audit``.
    :param interval: seconds between updates (default
        :data:`INTERVAL_S`).
    :param clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, stream: ty.TextIO, label: str,
                 interval: float | None = None,
                 clock: ty.Callable[[], float] = time.monotonic):
        self.stream = stream
        self.label = label
        self.interval = INTERVAL_S if interval is None else interval
        self.clock = clock
        isatty = getattr(stream, 'isatty', None)
        #: Rewrite one line in place (a terminal) or write one per update.
        self.in_place = bool(isatty and isatty())
        self.started = clock()
        self.last = self.started
        self.updates = 0
        #: The counts of the last :meth:`update`, said or not.
        self.images = 0
        self.pages = 0
        self._width = 0

    def _rate(self, images: int, now: float) -> str:
        elapsed = now - self.started
        if elapsed <= 0:
            return ''
        return ', %s images/s' % thousands(int(images / elapsed))

    def _write(self, text: str, final: bool) -> None:
        if self.in_place:
            # Pad over what a longer previous line left on the terminal.
            pad = max(0, self._width - len(text))
            self.stream.write('\r' + text + ' ' * pad +
                              ('\n' if final else ''))
            self._width = 0 if final else len(text)
        else:
            self.stream.write(text + '\n')
        self.stream.flush()
        self.updates += 1

    def update(self, images: int, pages: int, detail: str = '') -> None:
        """Say how far the listing is, unless said less than a second ago.

        :param images: images read so far.
        :param pages: pages (``GET /v2/images`` requests) so far.
        :param detail: appended, e.g. ``3 problems so far``.
        """
        self.images, self.pages = images, pages
        now = self.clock()
        if now - self.last < self.interval:
            return
        self.last = now
        self._write('%s: %s images read, %s pages%s%s' % (
            self.label, thousands(images), thousands(pages),
            self._rate(images, now), ', ' + detail if detail else ''),
            final=False)

    def done(self, images: int, pages: int) -> None:
        """The final line: everything read, in how long."""
        now = self.clock()
        self._write('%s: read %s images in %s pages, %.1f s%s' % (
            self.label, thousands(images), thousands(pages),
            now - self.started, self._rate(images, now)), final=True)
