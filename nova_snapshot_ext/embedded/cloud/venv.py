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

"""The one virtualenv every service of the cloud runs from.

Built with ``python -m venv`` and ``pip install -r requirements.txt`` (the
exact pins beside this module), cached as ``<cache>/cloud-<key>/`` where
``<cache>`` is the directory of
:func:`nova_snapshot_ext.embedded.glance_venv.cache_root` (the tox envs set
it under ``{toxworkdir}``) and ``<key>`` a hash of the pins and the Python
series: a change of a pin builds a new one.  The install reuses
:func:`~nova_snapshot_ext.embedded.glance_venv.ensure_release` (lock, record,
log).

The plugin (this checkout) is installed into it the way
``doc/source/nova.rst`` says (``pip install /path/to/clone``), again only
when the checkout's files changed (:func:`ensure_plugin`).
"""

import hashlib
import os
import subprocess

from nova_snapshot_ext.embedded import digest
from nova_snapshot_ext.embedded import glance_venv

PYTHON = '3.11'
REQUIREMENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'requirements.txt')
_PLUGIN_MARK = 'nova-snapshot-ext-plugin.sha256'
PLUGIN_INSTALL_TIMEOUT = 600.0


class CloudVenvError(RuntimeError):
    """The cloud's virtualenv cannot be made."""


def pins(path=REQUIREMENTS):
    """The requirement lines of the cloud.

    :param path: the requirements file.
    :returns: a tuple of strings (comments and blank lines dropped).
    """
    with open(path) as fh:
        return tuple(line.split('#', 1)[0].strip() for line in fh
                     if line.split('#', 1)[0].strip())


def release(path=REQUIREMENTS):
    """The cloud as a release the shared venv machinery installs.

    :param path: the requirements file.
    :returns: a :class:`~nova_snapshot_ext.embedded.glance_venv.ServiceRelease`
        whose directory name carries a hash of the pins.
    """
    lines = pins(path)
    nova = [p for p in lines if p.startswith('nova==')]
    if not nova:
        raise CloudVenvError('%s pins no nova==' % path)
    key = hashlib.sha256(
        ('\n'.join(lines) + PYTHON).encode()).hexdigest()[:12]
    return _CloudRelease('nova', nova[0].split('==', 1)[1], PYTHON,
                         extras=tuple(p for p in lines if p != nova[0]),
                         name='cloud (%s)' % ', '.join(lines), key=key)


class _CloudRelease(glance_venv.ServiceRelease):
    """A ServiceRelease whose cache directory is keyed by its pins."""

    def __init__(self, *args, key, **kwargs):
        super().__init__(*args, **kwargs)
        object.__setattr__(self, 'key', key)

    @property
    def dirname(self):
        return 'cloud-%s' % self.key


def ensure():
    """The cloud's interpreter, installing the virtualenv if needed.

    :returns: the path of ``<cache>/cloud-<key>/bin/python``.
    :raises CloudVenvError: if the install fails.
    """
    try:
        return glance_venv.ensure_release(release())
    except glance_venv.GlanceVenvError as exc:
        raise CloudVenvError(str(exc))


def template_dir():
    """Where the cloud's migrated template lives (beside its venv).

    :returns: ``<cache>/cloud-<key>-template``.
    """
    return glance_venv.release_dir(release()) + '-template'


def checkout_root():
    """This project's source tree (the plugin installed into nova-api).

    :returns: the directory holding ``setup.py``.
    """
    return os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))


#: The plugin's installable files, relative to the checkout.
_PLUGIN_FILES = ('nova_snapshot_ext', 'setup.cfg', 'setup.py',
                 'requirements.txt')


def ensure_plugin(python, root=None):
    """Install this checkout into the cloud's venv, as nova.rst says.

    ``<venv>/bin/pip install --no-build-isolation <checkout>`` (else with
    build isolation); skipped while the checkout's files are those of the
    last install.

    :param python: the venv's interpreter.
    :param root: the checkout (default: this one).
    :returns: True if it installed, False if it was up to date.
    :raises CloudVenvError: if pip fails (with the tail of its output).
    """
    root = root or checkout_root()
    mark = os.path.join(os.path.dirname(os.path.dirname(python)),
                        _PLUGIN_MARK)
    wanted = digest.tree_digest(root, _PLUGIN_FILES)
    try:
        with open(mark) as fh:
            if fh.read().strip() == wanted:
                return False
    except OSError:
        pass
    pip = os.path.join(os.path.dirname(python), 'pip')
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)
    env.pop('VIRTUAL_ENV', None)
    env['PIP_DISABLE_PIP_VERSION_CHECK'] = '1'
    # pbr needs a version; the checkout's git gives it.  First with the
    # venv's own pbr, setuptools and wheel (requirements.txt): no package
    # index needed unless a requirement of the plugin is missing.  A venv
    # without setuptools (Python >= 3.12 makes none) builds in isolation,
    # fetching its build tools from the index.
    tails = []
    for cmd in ([pip, 'install', '--no-build-isolation', root],
                [pip, 'install', root]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  env=env, timeout=PLUGIN_INSTALL_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CloudVenvError('pip install %s: %s' % (root, exc))
        if proc.returncode == 0:
            break
        output = proc.stdout + proc.stderr
        tails.append('%s exited %d:\n%s' % (
            ' '.join(cmd[1:]), proc.returncode, output[-1500:]))
    else:
        raise CloudVenvError('pip could not install %s:\n%s' % (
            root, '\n'.join(tails)))
    with open(mark, 'w') as fh:
        fh.write(wanted)
    return True
