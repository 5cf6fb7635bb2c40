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

"""Digests of source files: what a cached thing was built from.

The cloud's virtualenv reinstalls the plugin when its files change
(:func:`tree_digest`); the cloud's and Keystone's templates are rebuilt
when the code that builds them changes (:func:`builder_digest`), so that
caches kept outside a clone (CI's) never hide a change to a cold start.
"""

import hashlib
import os


def tree_digest(root, tops, suffixes=None):
    """A digest of files' names and contents.

    Each file counts by its path relative to ``root`` and its bytes, each
    length-prefixed; hidden files and directories (an editor's lock or
    swap file), ``__pycache__`` and compiled files are left out.

    :param root: the directory ``tops`` are relative to.
    :param tops: files or directories under ``root``, walked in order.
    :param suffixes: only files ending so (e.g. ``('.py',)``); ``None``:
        every file.
    :returns: a SHA-256 hex string.
    """
    digest = hashlib.sha256()

    def add(data):
        digest.update(b'%d:' % len(data))
        digest.update(data)

    for top in tops:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            walk = [(root, [], [top])]
        else:
            walk = os.walk(path)
        for dirpath, dirnames, filenames in walk:
            dirnames[:] = sorted(d for d in dirnames
                                 if d != '__pycache__' and
                                 not d.startswith('.'))
            for name in sorted(filenames):
                base = os.path.basename(name)
                if base.startswith('.') or name.endswith(('.pyc', '.pyo')):
                    continue
                if suffixes is not None and not name.endswith(
                        tuple(suffixes)):
                    continue
                full = os.path.join(dirpath, name)
                add(os.path.relpath(full, root).encode())
                with open(full, 'rb') as fh:
                    add(fh.read())
    return digest.hexdigest()


def builder_digest():
    """A digest of the code that builds the embedded services' templates.

    Recorded with a template (the cloud's, Keystone's): one built by other
    code is not reused, so a change to how a service is initialised is
    proven by one cold start.

    :returns: :func:`tree_digest` of this package's Python files
        (``nova_snapshot_ext/embedded``).
    """
    here = os.path.dirname(os.path.abspath(__file__))
    return tree_digest(os.path.dirname(here), (os.path.basename(here),),
                       suffixes=('.py',))
