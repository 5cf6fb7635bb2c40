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

"""The system programs the cloud needs, and the Debian packages behind them.

Each service module declares ``PROGRAMS = {program or absolute path:
Debian package}``; :func:`require` checks them all before anything
starts and names what is missing with the one command that installs it.
"""

import os
import shutil

from nova_snapshot_ext.embedded import process as proc_mod

#: Where root's programs are when ``PATH`` lacks the sbin directories.
_SBIN = ('/usr/sbin', '/sbin')


class MissingPackages(proc_mod.CloudError):
    """Debian packages a cloud needs are not installed (nothing started)."""


def _found(program):
    """An absolute path: a file there; a name: a program on PATH or sbin."""
    if os.path.isabs(program):
        return os.path.isfile(program)
    if not program or os.sep in program:
        return False  # only names and absolute paths are declared
    if shutil.which(program) is not None:
        return True
    return any(os.path.isfile(os.path.join(d, program)) and
               os.access(os.path.join(d, program), os.X_OK) for d in _SBIN)


def missing_packages(*program_maps):
    """The Debian packages whose programs or files are missing.

    :param program_maps: mappings ``{program name or absolute path:
        package}``.
    :returns: a sorted list of package names (empty when all are there).
    """
    missing = set()
    for programs in program_maps:
        for program, package in programs.items():
            if not _found(program):
                missing.add(package)
    return sorted(missing)


def install_command(packages):
    """The command that installs ``packages`` (text)."""
    return 'apt-get install --no-install-recommends ' + ' '.join(packages)


def require(what, *program_maps):
    """Refuse when a program is missing, naming the install command.

    :param what: what needs them, for the message (e.g. ``'the cloud'``).
    :param program_maps: as :func:`missing_packages`.
    :returns: None
    :raises MissingPackages: ``<what> needs Debian packages that are not
        installed: <packages>; install them with: apt-get install ...``.
    """
    missing = missing_packages(*program_maps)
    if missing:
        raise MissingPackages(
            '%s needs Debian packages that are not installed: %s; install '
            'them with: %s' % (what, ', '.join(missing),
                               install_command(missing)))
