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

"""The cloud on real storage and a real hypervisor (``stack='real'``).

What changes from the default stand-ins (Cinder's and Nova's fake
drivers), and nothing else:

* **Ceph** (:mod:`.ceph`): Cinder's RBD driver on the pool ``volumes``
  (volume snapshots are RBD snapshots, volumes from them RBD clones), and
  with ``glance_store='rbd'`` Glance's RBD store on ``images``; one
  restricted Ceph user, ``client.cinder``, with cephx on.
* **libvirt + QEMU (TCG)** (:mod:`.libvirtd`): nova-compute runs
  ``libvirt.LibvirtDriver`` with ``virt_type = qemu`` against the cloud's
  private libvirtd, which holds the Ceph user's key as the secret Cinder's
  ``rbd_secret_uuid`` names; ``shutdown_timeout = 3`` (the marker guest
  does not act on ACPI's power button).
* nova-api's plugin runs ``[snapshot_ext] driver = libvirt`` and reads
  Nova's own ``[libvirt] virt_type``, as an operator's would.
* Debian's Python bindings (``rados``, ``rbd``, ``libvirt``) are made
  importable in the cloud's virtualenv by one ``.pth`` naming a folder of
  links to just those files (same CPython ABI; not
  ``--system-site-packages``, which would bring every Debian module).
* A stand-in ``sudo`` first on the services' ``PATH`` (the cloud runs as
  root): it drops sudo's options and a ``<x>-rootwrap <config>`` pair and
  runs the rest, so Nova's privsep helper and Cinder's ``run_as_root``
  commands run without sudoers or rootwrap filters.

The network stays the stand-in endpoint (servers boot with
``networks: none``).
"""

import glob
import os
import stat
import sys

from nova_snapshot_ext.embedded.cloud import ceph as ceph_mod
from nova_snapshot_ext.embedded.cloud import guest
from nova_snapshot_ext.embedded.cloud import libvirtd as libvirtd_mod
from nova_snapshot_ext.embedded import process as proc_mod

#: ``stack`` values of the cloud.
STACKS = ('fake', 'real')
#: ``glance_store`` values (``rbd`` only on the real stack).
GLANCE_STORES = ('file', 'rbd')
DIST_PACKAGES = '/usr/lib/python3/dist-packages'
#: Debian's binding files linked into the venv (glob patterns).
BINDINGS = ('rados.cpython-*.so', 'rbd.cpython-*.so', 'libvirt.py',
            'libvirt_qemu.py', 'libvirt_lxc.py', 'libvirtaio.py',
            'libvirtmod*.so')
_BINDINGS_DIR = 'debian-bindings'
_PTH_NAME = 'nova-snapshot-ext-debian-bindings.pth'
#: Seconds nova-compute waits for a guest to power off before it
#: destroys the domain.
SHUTDOWN_TIMEOUT = 3

SUDO = """\
#!/bin/sh
# A stand-in sudo for the cloud in a box, which runs as root
# (nova_snapshot_ext.embedded.cloud.realstack): drop sudo's options and a
# "<x>-rootwrap <config>" pair, run the rest.
fail() { echo "stand-in sudo: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case "$1" in
    -[CDgphRrTtUu]|--user|--group|--chdir|--close-from|--prompt|--host|\\
    --role|--type|--chroot|--other-user|--command-timeout) shift 2 ;;
    -[ilsvKVe]|--login|--shell|--validate|--list|--edit)
      fail "$1 is not a command it runs" ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
case "$1" in
  *-rootwrap-daemon) fail "rootwrap's daemon mode is not supported" ;;
  *-rootwrap) [ $# -ge 3 ] || fail "$1 needs a config and a command"
    shift 2 ;;
esac
[ $# -gt 0 ] || fail "no command"
exec "$@"
"""


#: What the real stack needs besides the base cloud's programs.
PROGRAM_MAPS = (ceph_mod.PROGRAMS, libvirtd_mod.PROGRAMS, guest.PROGRAMS)


def link_bindings(python, dist_packages=DIST_PACKAGES):
    """Make Debian's rados, rbd and libvirt importable by ``python``'s venv.

    :param python: the venv's interpreter.
    :param dist_packages: where Debian's bindings are.
    :returns: the folder of links.
    :raises CloudError: when the venv's CPython ABI has no Debian build.
    """
    root = os.path.dirname(os.path.dirname(python))
    folder = os.path.join(root, _BINDINGS_DIR)
    os.makedirs(folder, exist_ok=True)
    abi = 'cpython-%d%d' % _venv_version(root)
    for pattern in BINDINGS:
        for src in glob.glob(os.path.join(dist_packages, pattern)):
            name = os.path.basename(src)
            if name.endswith('.so') and abi not in name:
                continue
            dst = os.path.join(folder, name)
            if os.path.islink(dst) and os.readlink(dst) == src:
                continue
            if os.path.lexists(dst):
                os.remove(dst)
            os.symlink(src, dst)
    if not glob.glob(os.path.join(folder, 'rados.%s-*.so' % abi)):
        raise proc_mod.CloudError(
            'Debian has no rados binding for the cloud\'s Python (%s) in %s:'
            ' the real stack needs the venv on the Debian Python\'s series'
            % (abi, dist_packages))
    site = glob.glob(os.path.join(root, 'lib', 'python*', 'site-packages'))
    for path in site:
        pth = os.path.join(path, _PTH_NAME)
        with open(pth + '.tmp', 'w') as fh:
            fh.write(folder + '\n')
        os.replace(pth + '.tmp', pth)
    return folder


def _venv_version(root):
    """``(major, minor)`` of the venv in ``root`` (from pyvenv.cfg)."""
    try:
        with open(os.path.join(root, 'pyvenv.cfg')) as fh:
            for line in fh:
                key, _, value = line.partition('=')
                if key.strip() in ('version', 'version_info'):
                    major, minor = value.strip().split('.')[:2]
                    return int(major), int(minor)
    except (OSError, ValueError):
        pass
    return sys.version_info[:2]


def write_sudo(bin_dir):
    """Write the stand-in ``sudo`` into ``bin_dir`` (see module)."""
    os.makedirs(bin_dir, exist_ok=True)
    path = os.path.join(bin_dir, 'sudo')
    with open(path, 'w') as fh:
        fh.write(SUDO)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP |
             stat.S_IXOTH)
    return path


class RealStack(object):
    """Ceph and libvirtd of one cloud, and what the services read of them.

    :param procs: the cloud's :class:`~.process.Processes`.
    :param base_dir: the cloud's directory.
    :param ports: ``{'ceph_v2': int, 'ceph_v1': int, 'libvirt': int}``.
    :param glance_store: ``'file'`` or ``'rbd'``.
    """

    def __init__(self, procs, base_dir, ports, glance_store='file'):
        if glance_store not in GLANCE_STORES:
            raise KeyError('unknown Glance store %r (known: %s)' % (
                glance_store, ', '.join(GLANCE_STORES)))
        self.procs = procs
        self.base_dir = base_dir
        self.glance_store = glance_store
        self.ceph = ceph_mod.Ceph(procs, base_dir,
                                  (ports['ceph_v2'], ports['ceph_v1']))
        self.libvirtd = libvirtd_mod.Libvirtd(procs, base_dir,
                                              ports['libvirt'])
        self.bin_dir = os.path.join(base_dir, 'bin')
        self.guest_disk = None

    def prepare(self, python):
        """Bindings into the venv, the stand-in sudo, the guest's disk.

        :param python: the cloud's venv interpreter.
        """
        link_bindings(python)
        write_sudo(self.bin_dir)
        self.guest_disk = guest.ensure()

    def start(self):
        """Start Ceph, then libvirtd with the Ceph user's secret.

        :returns: self
        """
        self.ceph.start()
        self.libvirtd.start()
        self.libvirtd.define_ceph_secret(self.ceph.fsid,
                                         self.ceph.client_key(),
                                         self.ceph.user)
        return self

    def cleanup(self):
        """What stays to undo once every process is stopped."""
        self.libvirtd.cleanup()

    # what the services read ------------------------------------------

    def cinder_backend(self):
        """Cinder's backend: ``(name, {option: value})``."""
        return ('ceph', {
            'volume_driver': 'cinder.volume.drivers.rbd.RBDDriver',
            'volume_backend_name': 'ceph',
            'rbd_pool': 'volumes',
            'rbd_ceph_conf': self.ceph.conf,
            'rbd_user': self.ceph.user,
            'rbd_secret_uuid': self.ceph.fsid,
            'rbd_flatten_volume_from_snapshot': False,
            'image_volume_cache_enabled': False,
        })

    def nova_compute_options(self):
        """nova-compute's sections (merged into its ``nova-cpu.conf``)."""
        return {
            'DEFAULT': {'compute_driver': 'libvirt.LibvirtDriver',
                        'shutdown_timeout': SHUTDOWN_TIMEOUT,
                        'reserved_host_memory_mb': 0},
            'libvirt': {'virt_type': 'qemu', 'cpu_mode': 'none',
                        'connection_uri': self.libvirtd.uri},
        }

    @staticmethod
    def nova_api_options():
        """nova-api's own ``[libvirt]`` (what the plugin's driver reads)."""
        return {'libvirt': {'virt_type': 'qemu'}}

    def glance_rbd_store(self):
        """:class:`EmbeddedGlance`'s ``rbd_store``, or None (file store)."""
        if self.glance_store != 'rbd':
            return None
        return {'pool': 'images', 'ceph_conf': self.ceph.conf,
                'user': self.ceph.user}

    def path_prefix(self):
        """What goes first on the services' ``PATH`` (the stand-in sudo)."""
        return self.bin_dir
