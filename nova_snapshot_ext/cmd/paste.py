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

"""``nova-snapshot-ext paste [--from FILE] --output FILE [--remove]``.

Reads a Nova ``api-paste.ini`` (``--from``; default: the file the
installed ``nova`` package ships, ``<prefix>/etc/nova/api-paste.ini``)
and writes it with the plugin's filter in every compute API pipeline
(:func:`nova_snapshot_ext.nova.paste_edit.add_filter`), or without it
(``--remove``).  ``--output`` may be the ``--from`` file (an edit in
place).  The file is written whole (a temporary file in the same
directory, then renamed), so a failure leaves the old file as it was;
its owner, group and mode are kept, and a symlink ``--output`` is
written through to the file it points to.

Exit status: 0 written (or already right: ``changed`` false, same
bytes); 2 a path that cannot be read or written, or a layout the edit
does not understand (the message names the composite); nothing is
written on any error.  ``--format json`` prints ``{"from", "output",
"changed", "composites", "removed", "sections"}``; ``sections`` is what
the edit wrote, shaped as OpenStack-Ansible's
``nova_api_paste_ini_overrides`` (with ``--remove``: the pipelines without
the filter; a key-by-key merge cannot delete the ``[filter:...]``
section, which then stays, named by no pipeline, never imported).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
import typing as ty

from oslo_config import cfg

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.nova import paste_edit

#: Where a Nova installed from a wheel or sdist keeps its paste file,
#: relative to the environment's prefix (nova's setup.cfg ``data_files``).
SHIPPED = os.path.join('etc', 'nova', 'api-paste.ini')


def add_parser(subparsers: ty.Any) -> None:
    """Add the ``paste`` sub-command."""
    p = subparsers.add_parser(
        'paste', help="write nova-api's api-paste.ini with the filter",
        description="Read a Nova api-paste.ini and write it with the "
        "plugin's filter right after keystonecontext in every compute API "
        'pipeline (doc/source/nova.rst), or without it (--remove). Every '
        'other line is kept; a second run writes the same bytes. A layout '
        'it does not understand is refused (exit 2) naming the composite, '
        'and nothing is written.')
    p.add_argument('--from', dest='source', metavar='FILE',
                   help="the paste file to read (default: the one the "
                   "installed nova package ships, <prefix>/%s)" % SHIPPED)
    p.add_argument('--output', metavar='FILE', required=True,
                   help='where to write it (may be the --from file)')
    p.add_argument('--remove', action='store_true',
                   help="take the plugin's filter out instead")


def shipped_paste() -> str:
    """The ``api-paste.ini`` the installed ``nova`` package ships.

    :returns: its path.
    :raises CLIError: exit 2 when nova is not installed here or ships no
        such file.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution('nova')
    except metadata.PackageNotFoundError:
        raise checks.CLIError(
            'nova is not installed in this Python environment (%s): pass '
            '--from FILE, the api-paste.ini of the Nova you deploy'
            % sys.prefix)
    for entry in dist.files or []:
        if str(entry).replace('\\', '/').endswith('etc/nova/api-paste.ini'):
            path = os.path.normpath(str(dist.locate_file(entry)))
            if os.path.isfile(path):
                return path
    path = os.path.join(sys.prefix, SHIPPED)
    if os.path.isfile(path):
        return path
    raise checks.CLIError('nova %s is installed but its api-paste.ini is '
                          'not (looked for %s): pass --from FILE'
                          % (dist.version, path))


def _read(path: str) -> str:
    if os.path.isdir(path):
        raise checks.CLIError('--from %s is a directory, not a paste file'
                              % path)
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError as err:
        raise checks.CLIError('--from %s cannot be read: %s'
                              % (path, err.strerror or err))
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as err:
        raise checks.CLIError('--from %s is not UTF-8 text (byte 0x%02x at '
                              'offset %d)' % (path, data[err.start],
                                              err.start))


def _check_output(path: str) -> str:
    """The directory ``path`` will be written in.

    :raises CLIError: exit 2 naming ``--output`` and why.
    """
    if not path.strip():
        raise checks.CLIError('--output must name a file')
    if os.path.isdir(path):
        raise checks.CLIError('--output %s is a directory: name the file '
                              '(e.g. %s)' % (path, os.path.join(
                                  path, 'api-paste.ini')))
    directory = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(directory):
        raise checks.CLIError('--output %s: directory %s does not exist'
                              % (path, directory))
    if not os.access(directory, os.W_OK | os.X_OK):
        raise checks.CLIError('--output %s: directory %s is not writable '
                              'by this user' % (path, directory))
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise checks.CLIError('--output %s is not writable by this user'
                              % path)
    return directory


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole, or not at all.

    A symlink is written through: the file it resolves to is replaced
    and the link stays.  A temporary file in that file's directory gets
    the existing file's owner, group and permission bits (0644 and this
    user's for a new file), then is renamed over it.

    :raises OSError: the write failed, or the existing file's owner or
        group cannot be given to the new one (not root, not its owner):
        the old file is untouched.
    """
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    old = None
    with contextlib.suppress(FileNotFoundError):
        old = os.stat(target)
    fd, tmp = tempfile.mkstemp(prefix='.api-paste.', dir=directory)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8', newline='') as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if old is not None:
            new = os.stat(tmp)
            if (new.st_uid, new.st_gid) != (old.st_uid, old.st_gid):
                try:
                    os.chown(tmp, old.st_uid, old.st_gid)
                except PermissionError as err:
                    raise PermissionError(
                        err.errno, 'cannot keep its owner and group '
                        '%d:%d (run as root or as its owner)'
                        % (old.st_uid, old.st_gid)) from err
        os.chmod(tmp, stat.S_IMODE(old.st_mode) if old is not None
                 else 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def run(conf: cfg.ConfigOpts) -> int:
    """Read, edit, write; print what was done; return the exit status."""
    args = conf.command
    source = args.source if args.source is not None else shipped_paste()
    if not source.strip():
        raise checks.CLIError('--from must name a file')
    text = _read(source)
    _check_output(args.output)
    try:
        edit = (paste_edit.remove_filter(text) if args.remove else
                paste_edit.add_filter(text))
    except paste_edit.LayoutError as err:
        raise checks.CLIError('%s: %s' % (source, err), checks.EXIT_INPUT,
                              composite=err.composite)
    same_file = (os.path.exists(args.output) and
                 os.path.samefile(source, args.output))
    if not (same_file and not edit.changed):
        try:
            write_atomically(args.output, edit.text)
        except OSError as err:
            raise checks.CLIError('--output %s cannot be written: %s'
                                  % (args.output, err.strerror or err))
    if conf.format == 'json':
        print(json.dumps({'from': source, 'output': args.output,
                          'changed': edit.changed, 'removed': args.remove,
                          'composites': edit.composites,
                          'sections': edit.sections}, indent=2,
                         sort_keys=True))
    else:
        what = ('taken out of' if args.remove else 'in') if edit.changed \
            else ('not in' if args.remove else 'already in')
        print('%s: the filter is %s %s (from %s)' % (
            args.output, what, ', '.join(edit.composites), source))
    return checks.EXIT_OK
