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

"""Base test case: a private ConfigOpts, fatal message-format errors."""

import copy
import json
import logging
import os

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslotest import base

from nova_snapshot_ext import exception
from nova_snapshot_ext import opts

SAMPLE_REQUEST = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    'nova_snapshot_ext', 'data', 'sample-request.json')


def sample_request_dict():
    """The shipped sample request as a fresh dict."""
    with open(SAMPLE_REQUEST, encoding='utf-8') as f:
        return copy.deepcopy(json.load(f))


def chained(outer, inner):
    """``outer`` raised while handling ``inner`` (its ``__context__``).

    How the layers under glanceclient report one fault (urllib3 under
    requests under keystoneauth); returns ``outer``, raised once.
    """
    try:
        raise inner
    except BaseException:  # noqa: B902 - building a chain
        try:
            raise outer
        except BaseException as err:  # noqa: B902
            return err


def private_conf(config_files=()):
    """A private ConfigOpts with the plugin's options, parsed.

    The one place tests build a configuration: read from ``config_files``
    only (no command line, no default files or directories), as the CLI
    reads a ``--config-file``.

    :param config_files: paths of oslo.config ini files.
    :returns: a :class:`oslo_config.cfg.ConfigOpts`.
    """
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf(args=[], project='nova-snapshot-ext',
         default_config_files=list(config_files), default_config_dirs=[])
    return conf


class PrivateConf(fixtures.Fixture):
    """:func:`private_conf` for one test, message-format errors fatal.

    :ivar conf: the ConfigOpts (overrides reset after the test).
    """

    def __init__(self, config_files=()):
        super().__init__()
        self.config_files = config_files

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.exception.FATAL_FORMAT_ERRORS', True))
        self.conf = self.useFixture(config_fixture.Config(
            private_conf(self.config_files))).conf


class PluginLogRecords(fixtures.Fixture):
    """Every log record of the plugin's own loggers (``nova_snapshot_ext.*``).

    Judges what the plugin said, whatever else the process logs: another
    library's line (stevedore's ``ERROR ... Could not load`` for an
    optional oslo.cache backend, logged by whichever test first loads it)
    must not decide a test.  The logger's level and handlers are left as
    they are; :attr:`records` is the list of ``logging.LogRecord``.
    """

    def __init__(self, name='nova_snapshot_ext'):
        super().__init__()
        self.name = name
        self.records = []

    def _setUp(self):
        handler = logging.Handler(level=logging.DEBUG)
        handler.emit = self.records.append
        self.useFixture(fixtures.LogHandler(
            handler, name=self.name, level=None, nuke_handlers=False))

    def at_least(self, level):
        """The records at ``level`` (e.g. ``logging.ERROR``) or above.

        With a traceback attached or not, as ``'LEVEL name: message'``
        lines.
        """
        return ['%s %s: %s' % (r.levelname, r.name, r.getMessage())
                for r in self.records if r.levelno >= level]

    def tracebacks(self):
        """The records that carry an exception's traceback."""
        return ['%s: %s' % (r.name, r.getMessage())
                for r in self.records if r.exc_info]


class TestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(PrivateConf()).conf

    def flags(self, group='snapshot_ext', **kw):
        for name, value in kw.items():
            self.conf.set_override(name, value, group=group)


__all__ = ['PrivateConf', 'TestCase', 'chained', 'exception', 'private_conf',
           'sample_request_dict']


class Clock:
    """A clock that moves only when :meth:`sleep` is called.

    A ``clock`` and ``sleep`` pair for code that waits (``copies.Wait``,
    a rotation's patience): ``slept`` lists what it asked for.
    """

    def __init__(self, now=1000.0):
        self.now = now
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds
