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

"""Real OpenStack services from the package index, one cached virtualenv each.

:class:`~nova_snapshot_ext.embedded.glance.EmbeddedGlance` runs glance-api
with any interpreter that has ``glance`` and ``gunicorn`` installed
(``python=``).  This module makes such interpreters: one virtualenv per
Glance major, ``<cache>/glance-NN/``, created with ``python -m venv`` and
``pip install glance==X gunicorn`` plus the few pins an older release needs
on today's package index (:data:`RELEASES`), and reused as long as what it
was built from is unchanged (recorded in ``<cache>/glance-NN/`` as
:data:`RECORD_NAME`).  An install that did not finish leaves no record and
is redone from scratch.

The same machinery installs other services the tests run for real (a
:class:`ServiceRelease`, e.g. Keystone for
:mod:`nova_snapshot_ext.embedded.keystone`): :func:`ensure_release` makes
``<cache>/<package>-NN/`` the same way.

The cache directory is ``$NOVA_SNAPSHOT_EXT_GLANCE_VENVS``, by default
``.tox/glance-venvs`` under the current directory (the ``glanceNN`` tox
envs set it to ``{toxworkdir}/glance-venvs``), so a fresh clone starts
without any.  pip's own download cache is used as usual.

Command line (creates what is missing, one log per major in the cache
directory)::

    python -m nova_snapshot_ext.embedded.glance_venv 28 29 30
    python -m nova_snapshot_ext.embedded.glance_venv --list

In Python::

    python = glance_venv.ensure(29)       # path of glance-29/bin/python
    with EmbeddedGlance(python=python) as glance:
        ...
"""

import argparse
import collections
import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

from nova_snapshot_ext.embedded import logs

#: Environment variable naming the cache directory.
CACHE_ENV = 'NOVA_SNAPSHOT_EXT_GLANCE_VENVS'
#: Environment variable naming the interpreter the virtualenvs are made
#: from (overrides :attr:`GlanceRelease.python`).
PYTHON_ENV = 'NOVA_SNAPSHOT_EXT_GLANCE_PYTHON'
#: Written into a virtualenv once its install succeeded.
RECORD_NAME = 'nova-snapshot-ext-venv.json'
#: pip gets this long (seconds) to install one release.
INSTALL_TIMEOUT = 1800.0
_LOG_TAIL_LINES = 30


class GlanceVenvError(RuntimeError):
    """A Glance virtualenv cannot be created or is not usable."""


@dataclasses.dataclass(frozen=True)
class ServiceRelease:
    """One release of an OpenStack service from the package index.

    :ivar package: the distribution name, e.g. ``'keystone'``.
    :ivar version: the exact version installed.
    :ivar python: the ``X.Y`` Python the virtualenv is made with.
    :ivar extras: further requirement strings installed beside it (the
        WSGI server, pins).
    :ivar name: a label for messages, e.g. ``'Keystone 30.0.0'``.
    """

    package: str
    version: str
    python: str
    extras: tuple[str, ...] = ()
    name: str = ''

    @property
    def major(self):
        """The major version, e.g. ``30``.

        :returns: an int.
        """
        return int(self.version.split('.')[0])

    @property
    def label(self):
        """E.g. ``'Keystone 30.0.0'``.

        :returns: a string.
        """
        return self.name or '%s %s' % (self.package, self.version)

    @property
    def dirname(self):
        """The virtualenv's directory name in the cache, e.g. ``keystone-30``.

        :returns: a string.
        """
        return '%s-%d' % (self.package, self.major)

    def requirements(self):
        """What pip installs into the virtualenv.

        :returns: a list of requirement strings.
        """
        return ['%s==%s' % (self.package, self.version)] + list(self.extras)


@dataclasses.dataclass(frozen=True)
class GlanceRelease:
    """One Glance major from the package index.

    :ivar major: the major version, e.g. ``29``.
    :ivar version: the newest release of that major on the package index.
    :ivar series: the OpenStack series, e.g. ``'2024.2'``.
    :ivar name: the series' name, e.g. ``'Dalmatian'`` ('' where not
        checked).
    :ivar python: the ``X.Y`` Python the virtualenv is made with (one this
        release declares support for and this project's tests run on).
    :ivar pins: extra requirement strings for dependencies whose newest
        release breaks this Glance (each explained in :data:`RELEASES`).
    :ivar location_api: Glance lists API v2.17 (``POST/GET
        /v2/images/{id}/locations``) in ``/versions``.
    :ivar inspects_uploads: uploaded data must match the image's
        ``disk_format`` (``[image_format] require_image_format_match``,
        refused with 415 otherwise).
    """

    major: int
    version: str
    series: str
    name: str
    python: str
    pins: tuple[str, ...] = ()
    location_api: bool = True
    inspects_uploads: bool = True
    #: The distribution installed (see :class:`ServiceRelease`).
    package = 'glance'

    @property
    def dirname(self):
        """The virtualenv's directory name in the cache, e.g. ``glance-29``.

        :returns: a string.
        """
        return 'glance-%d' % self.major

    @property
    def label(self):
        """E.g. ``'Glance 29.2.1 (2024.2 Dalmatian)'``.

        :returns: a string.
        """
        return 'Glance %s (%s)' % (
            self.version, ' '.join(p for p in (self.series, self.name) if p))

    def requirements(self):
        """What pip installs into the virtualenv.

        :returns: a list of requirement strings.
        """
        return ['glance==%s' % self.version, 'gunicorn'] + list(self.pins)


# Facts checked in the released wheels (glance/api/versions.py,
# glance/location.py, glance/db/migration.py CURRENT_RELEASE) and by the
# functional tests (tests/functional/test_glance_releases.py).
# Pins: only what the newest releases on the package index break (each
# found by starting that Glance; glance-manage db_sync fails without it).
#: oslo.utils 9 removed ``secretutils.md5``, which glance 28/29 import
#: (glance/image_cache/__init__.py).
_OSLO_UTILS_MD5 = 'oslo.utils<9'
#: oslo.db 17.3 removed ``sqlalchemy.session.EngineFacade``, which glance
#: 28-30 use (glance/db/sqlalchemy/api.py).
_OSLO_DB_ENGINE_FACADE = 'oslo.db<17.3'
RELEASES: dict[int, GlanceRelease] = collections.OrderedDict(
    (r.major, r) for r in (
        GlanceRelease(28, '28.2.0', '2024.1', 'Caracal', '3.11',
                      pins=(_OSLO_UTILS_MD5, _OSLO_DB_ENGINE_FACADE),
                      location_api=False,
                      inspects_uploads=False),
        GlanceRelease(29, '29.2.1', '2024.2', 'Dalmatian', '3.11',
                      pins=(_OSLO_UTILS_MD5, _OSLO_DB_ENGINE_FACADE),
                      inspects_uploads=False),
        GlanceRelease(30, '30.2.0', '2025.1', 'Epoxy', '3.11',
                      pins=(_OSLO_DB_ENGINE_FACADE,)),
        GlanceRelease(31, '31.1.0', '2025.2', 'Flamingo', '3.11'),
        GlanceRelease(32, '32.0.0', '2026.1', '', '3.11'),
        GlanceRelease(33, '33.0.0', '2026.2', '', '3.11'),
    ))


def release(major):
    """The :data:`RELEASES` entry of a Glance major.

    :param major: an int or a string such as ``'29'``.
    :returns: a :class:`GlanceRelease`.
    :raises GlanceVenvError: for a major not in :data:`RELEASES`.
    """
    try:
        return RELEASES[int(major)]
    except (KeyError, TypeError, ValueError):
        raise GlanceVenvError(
            'unknown Glance major %r (known: %s)' % (
                major, ', '.join(str(m) for m in RELEASES)))


def release_of_version(version):
    """The :data:`RELEASES` entry for an installed Glance version.

    :param version: a version string such as ``'33.0.0'``.
    :returns: a :class:`GlanceRelease`, or None for a major not listed.
    """
    try:
        return RELEASES.get(int(str(version).split('.')[0]))
    except ValueError:
        return None


def cache_root():
    """The directory holding the virtualenvs.

    :returns: an absolute path (``$NOVA_SNAPSHOT_EXT_GLANCE_VENVS``, or
        ``.tox/glance-venvs`` under the current directory).
    """
    return os.path.abspath(os.environ.get(CACHE_ENV) or
                           os.path.join('.tox', 'glance-venvs'))


def venv_dir(major):
    """Where the virtualenv of a Glance major lives.

    :param major: the Glance major.
    :returns: ``<cache>/glance-NN``.
    """
    return release_dir(release(major))


def release_dir(rel):
    """Where the virtualenv of a release lives.

    :param rel: a :class:`GlanceRelease` or :class:`ServiceRelease`.
    :returns: ``<cache>/<package>-NN``.
    """
    return os.path.join(cache_root(), rel.dirname)


def release_python(rel):
    """The interpreter inside the virtualenv of a release.

    :param rel: a :class:`GlanceRelease` or :class:`ServiceRelease`.
    :returns: ``<cache>/<package>-NN/bin/python`` (it may not exist yet).
    """
    return os.path.join(release_dir(rel), 'bin', 'python')


def log_path(major):
    """The install log of a Glance major.

    :param major: the Glance major.
    :returns: ``<cache>/glance-NN.log``.
    """
    return venv_dir(major) + '.log'


def venv_python(major):
    """The interpreter inside the virtualenv of a Glance major.

    :param major: the Glance major.
    :returns: ``<cache>/glance-NN/bin/python`` (it may not exist yet).
    """
    return release_python(release(major))


def base_interpreter(rel):
    """The interpreter a release's virtualenv is made with.

    :param rel: a :class:`GlanceRelease` or :class:`ServiceRelease`.
    :returns: an executable path: ``$NOVA_SNAPSHOT_EXT_GLANCE_PYTHON``,
        else ``pythonX.Y`` on ``PATH``, else this interpreter if it is
        ``X.Y``.
    :raises GlanceVenvError: if none is found.
    """
    forced = os.environ.get(PYTHON_ENV)
    if forced:
        return forced
    found = shutil.which('python%s' % rel.python)
    if found:
        return found
    if '%d.%d' % sys.version_info[:2] == rel.python:
        return sys.executable
    raise GlanceVenvError(
        '%s needs Python %s to install: no python%s on PATH (set %s to an '
        'interpreter)' % (rel.label, rel.python, rel.python, PYTHON_ENV))


def python_series(interpreter):
    """The ``X.Y`` version of an interpreter.

    :param interpreter: an executable.
    :returns: a string such as ``'3.11'``.
    :raises GlanceVenvError: if it cannot be run.
    """
    if interpreter == sys.executable:
        return '%d.%d' % sys.version_info[:2]
    try:
        return subprocess.run(
            [interpreter, '-c',
             'import sys; print("%d.%d" % sys.version_info[:2])'],
            capture_output=True, text=True, timeout=60,
            check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise GlanceVenvError('cannot run %s: %s' % (interpreter, exc))


def _wanted(rel, series):
    """What a virtualenv of ``rel`` must have been built from.

    Any interpreter of the same Python ``X.Y`` will do (a tox env's
    ``pythonX.Y`` and the system one are the same for this purpose).

    :param rel: a :class:`GlanceRelease` or :class:`ServiceRelease`.
    :param series: the base interpreter's ``X.Y``.
    :returns: a dict (compared with the recorded one).
    """
    return {rel.package: rel.version, 'requirements': rel.requirements(),
            'python_series': series}


def read_record(major):
    """What the virtualenv of a major was built from, if it is complete.

    :param major: the Glance major.
    :returns: the recorded dict, or None (no finished install).
    """
    return _read_release_record(release(major))


def _read_release_record(rel):
    """What the virtualenv of a release was built from, if it is complete.

    :param rel: a :class:`GlanceRelease` or :class:`ServiceRelease`.
    :returns: the recorded dict, or None (no finished install).
    """
    try:
        with open(os.path.join(release_dir(rel), RECORD_NAME)) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _run(cmd, log, timeout):
    """Run one install step, appending its output to the log.

    :param cmd: the argument list.
    :param log: the open (binary) log file.
    :param timeout: seconds.
    :returns: None
    :raises GlanceVenvError: if it fails, naming the command.
    """
    log.write(('$ %s\n' % ' '.join(cmd)).encode())
    log.flush()
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)
    env.pop('VIRTUAL_ENV', None)
    env['PIP_DISABLE_PIP_VERSION_CHECK'] = '1'
    try:
        rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=log, env=env, timeout=timeout).returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GlanceVenvError('%s: %s' % (' '.join(cmd), exc))
    if rc != 0:
        raise GlanceVenvError('%s exited with %d' % (' '.join(cmd), rc))


def installed_version(python, package='glance'):
    """The version of a service an interpreter imports.

    :param python: an executable.
    :param package: the distribution (and top-level module) name.
    :returns: the version string.
    :raises GlanceVenvError: if it has no ``package`` or gunicorn.
    """
    code = ('import importlib.metadata as m, gunicorn, %s; '
            'print(m.version("%s"))' % (package, package))
    try:
        out = subprocess.run([python, '-c', code], capture_output=True,
                             text=True, timeout=120, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise GlanceVenvError('%s cannot import %s and gunicorn: %s' %
                              (python, package, exc))
    return out.strip()


def _install(rel, interpreter, log):
    """Create the virtualenv of ``rel`` from scratch.

    :param rel: a :class:`GlanceRelease` or :class:`ServiceRelease`.
    :param interpreter: the base interpreter.
    :param log: the open (binary) log file.
    :returns: the record written.
    :raises GlanceVenvError: if a step fails.
    """
    path = release_dir(rel)
    shutil.rmtree(path, ignore_errors=True)
    started = time.monotonic()
    _run([interpreter, '-m', 'venv', path], log, 300)
    python = release_python(rel)
    _run([python, '-m', 'pip', 'install'] + rel.requirements(), log,
         INSTALL_TIMEOUT)
    version = installed_version(python, rel.package)
    if version != rel.version:
        raise GlanceVenvError('%s has %s %s installed, not %s' %
                              (path, rel.package, version, rel.version))
    py_version = subprocess.run(
        [python, '-c', 'import platform; print(platform.python_version())'],
        capture_output=True, text=True, check=True).stdout.strip()
    record = dict(_wanted(rel, python_series(interpreter)),
                  python=py_version, interpreter=interpreter,
                  seconds=round(time.monotonic() - started, 1))
    tmp = os.path.join(path, RECORD_NAME + '.tmp')
    with open(tmp, 'w') as fh:
        json.dump(record, fh, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(path, RECORD_NAME))
    return record


def ensure(major):
    """Return the interpreter of a Glance major, installing it if needed.

    Safe to call from several processes at once: one installs (under a
    lock file in the cache directory), the others wait and reuse it.

    :param major: the Glance major (see :data:`RELEASES`).
    :returns: the path of the virtualenv's ``python``.
    :raises GlanceVenvError: unknown major, no interpreter, or the install
        failed (the message ends with the tail of the install log).
    """
    return ensure_release(release(major))


def ensure_release(rel):
    """Return the interpreter of a release, installing it if needed.

    Same locking and record as :func:`ensure`; the log is
    ``<cache>/<package>-NN.log``.

    :param rel: a :class:`GlanceRelease` or :class:`ServiceRelease`.
    :returns: the path of the virtualenv's ``python``.
    :raises GlanceVenvError: no interpreter, or the install failed (the
        message ends with the tail of the install log).
    """
    interpreter = base_interpreter(rel)
    os.makedirs(cache_root(), exist_ok=True)
    path = release_dir(rel)
    log_file = path + '.log'
    with open(path + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = _read_release_record(rel)
        wanted = _wanted(rel, python_series(interpreter))
        if record is None or any(record.get(k) != v
                                 for k, v in wanted.items()):
            with open(log_file, 'ab') as log:
                log.write(('--- %s, %s\n' % (
                    rel.label, time.strftime('%Y-%m-%d %H:%M:%S'))).encode())
                try:
                    _install(rel, interpreter, log)
                except GlanceVenvError as exc:
                    log.flush()
                    raise GlanceVenvError(
                        'cannot install %s into %s: %s; log %s:\n%s' % (
                            rel.label, path, exc, log_file,
                            logs.tail(log_file, _LOG_TAIL_LINES)))
    return release_python(rel)


def main(argv=None):
    """Create the virtualenvs of the given Glance majors.

    :param argv: command line arguments (``sys.argv[1:]`` if None).
    :returns: the exit code (0: all ready, 1: an install failed).
    """
    parser = argparse.ArgumentParser(
        prog='python -m nova_snapshot_ext.embedded.glance_venv',
        description='Install real Glance releases from the package index '
                    'into cached virtualenvs (%s, now %s).' % (
                        CACHE_ENV, cache_root()))
    parser.add_argument('majors', nargs='*', type=int,
                        help='Glance majors (default: all of %s)' % (
                            ', '.join(str(m) for m in RELEASES)))
    parser.add_argument('--list', action='store_true',
                        help='only list the releases and what is cached')
    args = parser.parse_args(argv)
    majors = args.majors or list(RELEASES)
    status = 0
    for major in majors:
        try:
            rel = release(major)
        except GlanceVenvError as exc:
            print(exc)
            return 2
        if args.list:
            record = read_record(major)
            print('%s: Python %s, %s' % (
                rel.label, rel.python,
                'cached in %s (Python %s)' % (venv_dir(major),
                                              record.get('python'))
                if record else 'not installed'))
            continue
        started = time.monotonic()
        try:
            python = ensure(major)
        except GlanceVenvError as exc:
            print(exc)
            status = 1
            continue
        record = read_record(major) or {}
        print('%s ready: %s (Python %s, installed in %s s; this call %.1f '
              's)' % (rel.label, python, record.get('python'),
                      record.get('seconds'), time.monotonic() - started))
    return status


if __name__ == '__main__':
    sys.exit(main())
