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

"""The console script's logging: oslo.log, quiet libraries, no repeats.

At default verbosity only warnings and errors reach stderr, none from the
HTTP and plugin libraries (:data:`QUIET_LIBRARIES`), each warning once,
and never an ERROR record of the product's own: the command reports its
error itself.
"""

from __future__ import annotations

import logging as std_logging
import sys

from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import config

#: The product's logger namespace (its ERROR records are what the
#: command reports itself).
PROJECT_LOGGER = 'nova_snapshot_ext'

#: Libraries whose log lines are noise before an error at default
#: verbosity (``--debug`` shows them).
QUIET_LIBRARIES = ('keystoneauth', 'keystoneauth1', 'stevedore',
                   'glanceclient', 'urllib3', 'requests')


def setup_logging(conf: cfg.ConfigOpts) -> None:
    """oslo.log from the options; quiet libraries unless ``--debug``.

    At default verbosity only warnings and errors reach stderr, and none
    from keystoneauth, stevedore or glanceclient: the error the command
    reports says what failed.
    """
    if conf.log_file or conf.log_config_append:
        # --log-file: logs go there only; stderr keeps the errors.
        conf.set_default('use_stderr', False)
    level = 'DEBUG' if conf.debug else 'CRITICAL'
    levels = list(conf.default_log_levels) + [
        '%s=%s' % (name, level) for name in QUIET_LIBRARIES]
    if not conf.debug:
        levels.append('nova_snapshot_ext=WARNING')
    conf.set_default('default_log_levels', levels)
    try:
        logging.setup(conf, config.PROJECT)
    except logging.LogConfigError as err:
        raise checks.CLIError(
            'option [DEFAULT] log_config_append: %s' % err.err_msg,
            checks.EXIT_INPUT)
    except OSError as err:
        raise checks.CLIError(
            'cannot open the log file %s (--log-file/[DEFAULT] log_file, '
            '--log-dir/[DEFAULT] log_dir): %s'
            % (err.filename, err.strerror or err), checks.EXIT_INPUT)
    for handler in std_logging.getLogger().handlers:
        # stdout is the command's output (its report, --format json):
        # oslo.log writes there with use_stderr = false and no log file.
        if (isinstance(handler, std_logging.StreamHandler) and
                not isinstance(handler, std_logging.FileHandler) and
                handler.stream is sys.stdout):
            handler.setStream(sys.stderr)
    if not conf.debug:
        # The command reports every failure itself, as one ``error:``
        # line: the product's own ERROR records would say it twice on the
        # terminal.  A log file (--log-file) still gets them, as log lines.
        # What reaches the terminal reads as the command's own warnings:
        # ``warning: ...``, each once (--debug shows oslo.log's lines).
        once = _Once()
        for handler in std_logging.getLogger().handlers:
            if (isinstance(handler, std_logging.StreamHandler) and
                    not isinstance(handler, std_logging.FileHandler)):
                handler.addFilter(_not_reported_twice)
                handler.addFilter(once)
                if not getattr(conf, 'use_json', False):
                    # --use-json asks for oslo.log's JSON on stderr.
                    handler.setFormatter(ConsoleFormatter())


class ConsoleFormatter(std_logging.Formatter):
    """A log record on the terminal as the command's own line.

    ``warning: <message>`` (the level in lower case, as the command's
    ``error:`` lines), without oslo.log's time, pid, logger and request
    id: the same style as every warning the command prints itself.
    """

    def format(self, record: std_logging.LogRecord) -> str:
        return '%s: %s' % (record.levelname.lower(), record.getMessage())


class _Once(std_logging.Filter):
    """Let each text through once per command.

    Warnings share :data:`~nova_snapshot_ext.cmd.checks.WARNED` with the
    ones the command prints itself (:func:`~.checks.warn`).
    """

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[int, str]] = set()

    def filter(self, record: std_logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # noqa: B902 - a record that cannot format
            return True
        if record.levelno == std_logging.WARNING:
            if text in checks.WARNED:
                return False
            checks.WARNED.add(text)
            return True
        if (record.levelno, text) in self.seen:
            return False
        self.seen.add((record.levelno, text))
        return True


def _not_reported_twice(record: std_logging.LogRecord) -> bool:
    """Drop the product's ERROR records from the terminal handler."""
    return not (record.levelno >= std_logging.ERROR and
                record.name.startswith(PROJECT_LOGGER))
