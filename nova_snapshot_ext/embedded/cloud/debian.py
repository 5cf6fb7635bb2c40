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

"""The Debian packages a cloud in a box needs, per stack.

``python -m nova_snapshot_ext.embedded.cloud.debian [fake|real]`` prints
those still missing on one line (nothing when all are there).  It reads
the services' own declarations, so it needs the project's requirements
(oslo.log...): ``.ci/run`` calls it with the unit tests' interpreter
(``tox -e py3``) and installs what it prints.  The cloud checks the same
lists before it starts (:func:`.host.require`).
"""

import sys

from nova_snapshot_ext.embedded.cloud import host
from nova_snapshot_ext.embedded.cloud import services

#: What each stack needs, described for messages.
WHAT = {'fake': 'the cloud',
        'real': 'the cloud on the real stack (Ceph, libvirt/QEMU, the '
                'marker guest)'}


def program_maps(stack='fake'):
    """Every ``{program: Debian package}`` map of a cloud on ``stack``.

    :param stack: ``'fake'`` or ``'real'``.
    :returns: a list of mappings (:mod:`.host`'s input).
    """
    return services.program_maps(stack)


def require(stack='fake'):
    """Refuse when a package ``stack`` needs is missing.

    :raises CloudError: naming the packages and the install command.
    """
    host.require(WHAT[stack], *program_maps(stack))


def main(argv=None):
    """Print the missing packages of a stack (exit 2 on a bad argument)."""
    argv = sys.argv[1:] if argv is None else argv
    stack = argv[0] if argv else 'fake'
    if len(argv) > 1 or stack not in WHAT:
        print('usage: python -m nova_snapshot_ext.embedded.cloud.debian '
              '[fake|real]', file=sys.stderr)
        return 2
    missing = host.missing_packages(*program_maps(stack))
    if missing:
        print(' '.join(missing))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
