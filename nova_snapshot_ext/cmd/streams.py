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

"""The console script's standard streams.

A tee (stderr kept for a JSON error), and a stdout whose reader may go
away (``| head``).
"""

from __future__ import annotations

import contextlib
import io
import os
import typing as ty


class Tee(io.TextIOBase):
    """Write to a stream and keep a copy (argparse's usage errors)."""

    def __init__(self, stream: ty.Any, copy: io.StringIO):
        self.stream = stream
        self.copy = copy

    def write(self, text: str) -> int:
        self.copy.write(text)
        return int(self.stream.write(text))

    def flush(self) -> None:
        self.stream.flush()


class ReaderGone(io.TextIOBase):
    """Standard output that outlives its reader (``... | head -1``).

    Once the reader has closed the pipe, what is still written is
    dropped: the command goes on, cleans up and exits by its own outcome
    (an active snapshot is never exit 1 because nobody read all of its
    report), and no ``BrokenPipeError`` traceback is printed.
    """

    def __init__(self, stream: ty.Any):
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._drop()

    def isatty(self) -> bool:
        return bool(self.stream.isatty())

    def fileno(self) -> int:
        return int(self.stream.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(self.stream.encoding)

    def _drop(self) -> None:
        self.gone = True
        # What the stream still buffers is flushed at exit: to nowhere.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
