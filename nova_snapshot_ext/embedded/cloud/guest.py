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

"""The marker guest: a tiny bootable disk made from Debian packages only.

A 32 MiB raw disk: syslinux's MBR, one FAT16 partition (1 MiB to 29 MiB)
holding Debian's *cloud* kernel (LZ4: about 5 s to boot under QEMU's TCG,
where the generic XZ kernel takes 23-35 s), a busybox initramfs and
``syslinux.cfg``.  Nothing is mounted to build it (``mtools`` writes the
FAT, ``syslinux --offset`` the boot sector): 2-3 s, cached by the kernel's
and the guest agent's package versions, the host programs copied in (and
their libraries) and this module's recipe.

What the guest does, on its serial console (``console=ttyS0``): first
``NSE-BOOT <16 hex>``, an id of this boot; then for every virtio disk
``/dev/vdX`` in order:

* ``NSE-DISK vdX <sectors>``: the disk and its size in 512-byte sectors;
* ``NSE-READ vdX <marker>`` when sector :data:`MARKER_SECTOR` holds a
  marker (``NSEMARK-<24 hex>``);
* else, when that sector is all zeros, ``NSE-WROTE vdX <marker>``: it
  wrote a new random marker there (then ``sync``: QEMU runs Cinder's RBD
  disks with ``cache='none'``);
* else ``NSE-KEPT vdX``: the sector holds other data, left as it is (no
  marker).

Then, when there is a second disk (:data:`LOG_DISK`), a writer that
shows whether a snapshot of it is consistent.  Its first :data:`LOG_MIB`
MiB hold an ext4 filesystem labelled :data:`LOG_LABEL` (made by
e2fsprogs' ``mke2fs`` when the disk's first 64 KiB are zeros, as on a new
volume; the marker lies past it).  A disk that holds anything else, an
ext4 filesystem of another label included, is left alone: ``NSE-JOURNAL
vdb foreign``, and no writer.  Before mounting it, the guest says what
it found: ``NSE-JOURNAL vdb clean|recovery`` (the superblock's
needs-recovery flag: set while ext4 is mounted, cleared by a freeze),
``NSE-FSCK vdb <status>`` (``e2fsck -fn``; 0: nothing wrong) and ``NSE-LOG
vdb <records> ok|torn`` (the log's records, each numbered and whole, or
``torn``).  Then, mounted on ``/vol``, it appends one
:data:`RECORD_BYTES`-byte record five times a second to ``/vol/log``,
never syncing: the newest records are only in the page cache until the
kernel writes them back (up to 30 s) or a freeze flushes them.  It stops
at the first record it cannot write (a full filesystem: after about 11
hours).  Every
:data:`PROGRESS_EVERY` records it says ``NSE-WRITTEN vdb <records>``.

Then, when the hypervisor gave it the QEMU guest agent's channel (Nova
does for an image with ``hw_qemu_guest_agent=yes``), it starts Debian's
``qemu-ga`` there (``NSE-AGENT <port>``), with an fsfreeze hook that
prints ``NSE-FSFREEZE freeze <n>`` and ``NSE-FSFREEZE thaw <n>`` (``n``:
the records written when the hook ran): a quiesce and its thaw are seen
on the console.  The agent freezes every filesystem: the log's, and ext2
on a 4 MiB RAM disk (``brd``) mounted on ``/data``, there so that a guest
with one disk has something to freeze too (with no filesystem at all,
qemu-ga would thaw at once by itself and prove nothing), and so the
agent's ``guest-fsfreeze-status`` says ``frozen`` until someone thaws it.

Then ``NSE-DONE`` and it stays up (``os-getConsoleOutput`` answers 404
once a domain is shut off).  A disk is "told" to get a marker by being
empty at that sector: a new volume, or the root volume made from this
image, whose sector lies past the partition.  :func:`read_console` parses
those lines.
"""

import gzip
import hashlib
import os
import shutil
import subprocess
import tempfile

from nova_snapshot_ext.embedded.cloud import console
from nova_snapshot_ext.embedded.cloud import host
from nova_snapshot_ext.embedded import glance_venv
from nova_snapshot_ext.embedded import process as proc_mod

#: The sector (of 512 bytes) that holds a disk's marker: 30 MiB, past the
#: boot partition, inside the 32 MiB image and any volume made from it.
MARKER_SECTOR = 61440
DISK_MIB = 32
#: The partition: sectors 2048 .. 2048 + PARTITION_KIB * 2 - 1.
PARTITION_KIB = 28 * 1024
#: Modules the initramfs loads, in this order (``virtio`` needs
#: ``virtio_ring``).
MODULES = ('virtio_ring', 'virtio', 'virtio_pci_legacy_dev',
           'virtio_pci_modern_dev', 'virtio_pci', 'virtio_blk',
           'virtio_console')
#: Modules copied but loaded with their own arguments (the RAM disk).
OTHER_MODULES = ('brd',)
#: The disk whose first :data:`LOG_MIB` MiB hold the writer's ext4
#: filesystem (below :data:`MARKER_SECTOR`: the marker stays where it is).
LOG_DISK = 'vdb'
LOG_MIB = 16
#: The log filesystem's label: only a filesystem with it is the guest's
#: (any other on that disk is ``foreign``, left alone).
LOG_LABEL = 'NSE-LOG'
#: One record of the writer's log: ``NSEREC <8 digits> x...x\n``.
RECORD_BYTES = 64
#: The writer's pause between two records (microseconds): 5 a second.
RECORD_PAUSE_US = 200000
#: The writer says how far it got every so many records (``NSE-WRITTEN``).
PROGRESS_EVERY = 25
#: e2fsprogs' programs copied from the host (busybox's mke2fs makes no
#: journal and it has no e2fsck).
FS_PROGRAMS = ('mke2fs', 'e2fsck')
#: Where they are in the guest, called by path: busybox's shell prefers
#: its own applet (a journal-less ``mke2fs``) to a program of that name.
_SBIN = '/usr/sbin'
#: Debian's package of the QEMU guest agent (downloaded, never installed;
#: its libraries are copied from the host, where QEMU's packages put them).
AGENT_PACKAGE = 'qemu-guest-agent'
AGENT_CHANNEL = 'org.qemu.guest_agent.0'
KERNEL_META = 'linux-image-cloud-amd64'
MBR = '/usr/lib/syslinux/mbr/mbr.bin'
BUSYBOX = '/bin/busybox'
#: The Debian packages the build needs: ``{program or file: package}``.
PROGRAMS = {
    BUSYBOX: 'busybox-static',
    MBR: 'syslinux-common',
    'syslinux': 'syslinux',
    'mcopy': 'mtools',
    'mkfs.vfat': 'dosfstools',
    'sfdisk': 'fdisk',
    'cpio': 'cpio',
    'mke2fs': 'e2fsprogs',
    'e2fsck': 'e2fsprogs',
}
KERNEL_ARGS = 'console=ttyS0,115200 rdinit=/init panic=-1 quiet'
#: The writer's count of records appended to the journal disk's log.
_RECORDS = '/var/run/nse-records'
_HOOK = """#!/bin/sh
# qemu-ga's fsfreeze hook (nova_snapshot_ext.embedded.cloud.guest).
echo "NSE-FSFREEZE $1 $(cat %s 2>/dev/null || echo 0)" >/dev/console
exit 0
""" % _RECORDS

_INIT = r"""#!/bin/busybox sh
# The marker guest's init (nova_snapshot_ext.embedded.cloud.guest).
/bin/busybox --install -s /bin
mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sys /sys
mkdir -p /etc /var/run && ln -sf /proc/mounts /etc/mtab
for m in %(modules)s; do insmod /lib/modules/$m.ko; done
echo "NSE-BOOT $(head -c 8 /dev/urandom | hexdump -v -e '8/1 "%%02x"')"
n=0
while [ ! -b /dev/vda ] && [ $n -lt 50 ]; do sleep 0.2; n=$((n + 1)); done
for d in /dev/vd[a-z]; do
  [ -b "$d" ] || continue
  name=${d#/dev/}
  echo "NSE-DISK $name $(cat /sys/block/$name/size)"
  found=$(dd if=$d bs=512 skip=%(sector)d count=1 2>/dev/null | head -c 32)
  used=$(dd if=$d bs=512 skip=%(sector)d count=1 2>/dev/null |
         tr -d '\000' | head -c 1 | wc -c)
  case "$found" in
  NSEMARK-*) echo "NSE-READ $name $found" ;;
  *)
    if [ "$used" -ne 0 ]; then
      echo "NSE-KEPT $name: sector %(sector)d holds other data"
      continue
    fi
    new=NSEMARK-$(head -c 12 /dev/urandom | hexdump -v -e '12/1 "%%02x"')
    printf '%%s' "$new" | dd of=$d bs=512 seek=%(sector)d count=1 conv=sync \
      2>/dev/null
    sync
    echo "NSE-WROTE $name $new"
    ;;
  esac
done
if [ -b /dev/%(disk)s ]; then
  label=$(dd if=/dev/%(disk)s bs=1 skip=1144 count=%(label_len)d 2>/dev/null)
  used=$(dd if=/dev/%(disk)s bs=65536 count=1 2>/dev/null | tr -d '\000' |
         head -c 1 | wc -c)
  if [ "$label" = %(label)s ]; then
    mkdir -p /vol
  elif [ "$used" -eq 0 ]; then
    %(sbin)s/mke2fs -q -F -t ext4 -E nodiscard -L %(label)s /dev/%(disk)s \
      %(log_mib)dM && mkdir -p /vol
  else
    echo "NSE-JOURNAL %(disk)s foreign"
  fi
fi
if [ -d /vol ]; then
  incompat=$(dd if=/dev/%(disk)s bs=1 skip=1120 count=1 2>/dev/null |
             hexdump -v -e '1/1 "%%u"')
  if [ $((incompat & 4)) -ne 0 ]; then j=recovery; else j=clean; fi
  echo "NSE-JOURNAL %(disk)s $j"
  %(sbin)s/e2fsck -fn /dev/%(disk)s >/dev/null 2>&1
  echo "NSE-FSCK %(disk)s $?"
fi
if [ -d /vol ] && mount -t ext4 /dev/%(disk)s /vol; then
  touch /vol/log
  counted=$(awk 'BEGIN { ok = "ok" }
    $1 != "NSEREC" || $2 != sprintf("%%08d", NR) ||
    length($0) != %(line)d { ok = "torn" }
    END { print NR + 0, ok }' /vol/log)
  echo "NSE-LOG %(disk)s $counted"
  n=${counted%%%% *}
  echo $n >%(records)s
  while true; do
    n=$((n + 1))
    printf 'NSEREC %%08d %%s\n' $n %(pad)s >>/vol/log || break
    echo $n >%(records)s.new && mv %(records)s.new %(records)s
    [ $((n %% %(every)d)) -ne 0 ] || echo "NSE-WRITTEN %(disk)s $n"
    usleep %(pause_us)d
  done &
fi
insmod /lib/modules/brd.ko rd_nr=1 rd_size=4096
mkdir -p /data
mke2fs -q /dev/ram0 && mount -t ext2 /dev/ram0 /data && echo written >/data/f
for port in /sys/class/virtio-ports/*; do
  [ "$(cat $port/name 2>/dev/null)" = "%(channel)s" ] || continue
  mkdir -p /var/run
  qemu-ga -m virtio-serial -p /dev/${port##*/} -F/bin/nse-fsfreeze-hook \
    -t /var/run >/dev/console 2>&1 &
  echo "NSE-AGENT ${port##*/}"
done
echo NSE-DONE
while true; do sleep 3600; done
"""


class GuestError(proc_mod.CloudError):
    """The guest image cannot be built."""


def init_script():
    """The guest's ``/init`` (text)."""
    return _INIT % {'modules': ' '.join(MODULES),
                    'sector': MARKER_SECTOR, 'channel': AGENT_CHANNEL,
                    'disk': LOG_DISK, 'log_mib': LOG_MIB,
                    'line': RECORD_BYTES - 1,
                    'pad': 'x' * (RECORD_BYTES - len('NSEREC 00000000 \n')),
                    'records': _RECORDS, 'pause_us': RECORD_PAUSE_US,
                    'sbin': _SBIN, 'every': PROGRESS_EVERY,
                    'label': LOG_LABEL, 'label_len': len(LOG_LABEL)}


def _run(cmd, cwd, timeout=120, stdin=b'', raw=False):
    env = dict(os.environ, PATH=os.environ.get('PATH', '') +
               ':/usr/sbin:/sbin', MTOOLS_SKIP_CHECK='1')
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env,
                            timeout=timeout, input=stdin)
    if result.returncode != 0:
        raise GuestError('%s exited with %d: %s' % (
            ' '.join(cmd), result.returncode,
            (result.stderr or result.stdout).decode('utf-8', 'replace')
            [-1500:]))
    if raw:
        return result.stdout
    return result.stdout.decode('utf-8', 'replace')


def kernel_package():
    """The versioned package ``linux-image-cloud-amd64`` depends on.

    :returns: e.g. ``'linux-image-6.1.0-57-cloud-amd64'``.
    :raises GuestError: if apt knows none (run ``apt-get update``).
    """
    try:
        out = _run(['apt-cache', 'depends', KERNEL_META], cwd='/')
    except GuestError as err:
        raise GuestError('apt knows no %s (%s); run: apt-get update'
                         % (KERNEL_META, err))
    for line in out.splitlines():
        line = line.strip()
        if line.startswith('Depends:') and 'linux-image-' in line:
            return line.split(':', 1)[1].strip()
    raise GuestError('apt knows no kernel behind %s; run: apt-get update'
                     % KERNEL_META)


def cache_dir():
    """Where built guests are kept (beside the cloud's virtualenvs)."""
    return os.path.join(glance_venv.cache_root(), 'guests')


def candidate_version(package):
    """The version apt would download of ``package`` ('' if none)."""
    try:
        out = _run(['apt-cache', 'policy', package], cwd='/')
    except GuestError:
        return ''
    for line in out.splitlines():
        if line.strip().startswith('Candidate:'):
            version = line.split(':', 1)[1].strip()
            return '' if version == '(none)' else version
    return ''


def recipe_key(kernel, agent='', programs=()):
    """A key of what makes the disk: the packages and the recipe.

    :param kernel: the kernel package; ``agent`` the guest agent's version;
        ``programs`` :func:`programs_key`.
    """
    text = '\n'.join([kernel, agent, init_script(), _HOOK, KERNEL_ARGS,
                      str(DISK_MIB), str(PARTITION_KIB)] + list(MODULES) +
                     list(OTHER_MODULES) + list(programs))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def programs_key():
    """The identity of the host programs a guest carries (their digests).

    Each program's and each library's it loads: a library upgraded on the
    host makes a new guest.

    :returns: a list of ``'<name> <path> <sha256>'``, for
        :func:`recipe_key`.
    :raises GuestError: when the host lacks one.
    """
    key = []
    for name in FS_PROGRAMS:
        program = host_program(name)
        for path in [program] + shared_libraries(program):
            with open(path, 'rb') as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            key.append('%s %s %s' % (name, path, digest))
    return key


def ensure(directory=None):
    """The marker guest's raw disk, built once per recipe and kernel.

    :param directory: the cache directory (default :func:`cache_dir`).
    :returns: the path of a 32 MiB raw disk image.
    :raises GuestError: if a Debian package is missing (named with the
        command that installs it) or a build step fails.
    """
    host.require('the marker guest', PROGRAMS)
    directory = os.path.abspath(directory or cache_dir())
    kernel = kernel_package()
    agent = candidate_version(AGENT_PACKAGE)
    if not agent:
        raise GuestError('apt knows no %s; run: apt-get update'
                         % AGENT_PACKAGE)
    path = os.path.join(directory,
                        'guest-%s.raw' % recipe_key(kernel, agent,
                                                    programs_key()))
    if os.path.exists(path):
        return path
    os.makedirs(directory, exist_ok=True)
    work = tempfile.mkdtemp(prefix='guest-build-', dir=directory)
    try:
        built = _build(work, kernel)
        os.replace(built, path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return path


def _download(work, package):
    """``apt-get download`` and ``dpkg-deb -x``: the package's file tree."""
    folder = os.path.join(work, package)
    os.makedirs(folder)
    try:
        _run(['apt-get', 'download', package], cwd=folder, timeout=600)
    except GuestError as err:
        raise GuestError('%s (apt\'s lists may name a version the archive '
                         'no longer serves: run apt-get update)' % err)
    debs = [n for n in os.listdir(folder) if n.endswith('.deb')]
    if len(debs) != 1:
        raise GuestError('apt-get download %s left %r' % (package, debs))
    tree = os.path.join(folder, 'tree')
    _run(['dpkg-deb', '-x', debs[0], tree], cwd=folder)
    return tree


def _build(work, kernel):
    tree = _download(work, kernel)
    agent = os.path.join(_download(work, AGENT_PACKAGE), 'usr', 'sbin',
                         'qemu-ga')
    version = kernel[len('linux-image-'):]
    vmlinuz = os.path.join(tree, 'boot', 'vmlinuz-' + version)
    initrd = _initramfs(work, os.path.join(tree, 'lib', 'modules', version),
                        agent)
    return _disk(work, vmlinuz, initrd)


def shared_libraries(program):
    """The host's files a dynamically linked ``program`` loads (``ldd``).

    :returns: a list of absolute paths (the loader included).
    :raises GuestError: when one is not found on this host.
    """
    out = _run(['ldd', program], cwd='/')
    found = []
    for line in out.splitlines():
        line = line.strip()
        if 'version' in line and 'not found' in line:
            raise GuestError('%s needs a newer %s than this host has (%s)'
                             % (program, line.split(':')[0], line))
        if 'not found' in line:
            raise GuestError(
                '%s needs %s, which this host lacks (QEMU\'s packages bring '
                'the agent\'s libraries: apt-get install '
                '--no-install-recommends qemu-system-x86)'
                % (program, line.split()[0]))
        if '=>' in line:
            path = line.split('=>', 1)[1].split('(')[0].strip()
        else:
            path = line.split('(')[0].strip()
        if path.startswith('/'):
            found.append(path)
    return found


def host_program(name):
    """The absolute path of a host program (on PATH or in sbin).

    :raises GuestError: when the host has none.
    """
    found = shutil.which(name, path=os.environ.get('PATH', '') +
                         ':/usr/sbin:/sbin')
    if not found:
        raise GuestError('this host has no %s' % name)
    return os.path.realpath(found)


def _add_program(root, program, path):
    """A dynamically linked program at ``path``, with its libraries."""
    dst = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copy(program, dst)
    for path in shared_libraries(program):
        dst = os.path.join(root, path.lstrip('/'))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(path, dst)  # the file a link names, not the link
        os.chmod(dst, 0o755)


def _add_agent(root, agent):
    """qemu-ga, the libraries it loads and its fsfreeze hook."""
    _add_program(root, agent, '/bin/qemu-ga')
    hook = os.path.join(root, 'bin', 'nse-fsfreeze-hook')
    with open(hook, 'w') as fh:
        fh.write(_HOOK)
    os.chmod(hook, 0o755)


def _initramfs(work, modules_dir, agent):
    root = os.path.join(work, 'initramfs')
    for sub in ('bin', 'dev', 'proc', 'sys', 'lib/modules'):
        os.makedirs(os.path.join(root, sub))
    shutil.copy(BUSYBOX, os.path.join(root, 'bin', 'busybox'))
    os.symlink('busybox', os.path.join(root, 'bin', 'sh'))
    found = {}
    for dirpath, _dirs, files in os.walk(modules_dir):
        for name in files:
            if name.endswith('.ko') and \
                    name[:-3] in MODULES + OTHER_MODULES:
                found[name[:-3]] = os.path.join(dirpath, name)
    absent = [m for m in MODULES + OTHER_MODULES if m not in found]
    if absent:
        raise GuestError('the kernel has no module %s' % ', '.join(absent))
    for name, src in found.items():
        shutil.copy(src, os.path.join(root, 'lib', 'modules', name + '.ko'))
    _add_agent(root, agent)
    for name in FS_PROGRAMS:
        _add_program(root, host_program(name), _SBIN + '/' + name)
    init = os.path.join(root, 'init')
    with open(init, 'w') as fh:
        fh.write(init_script())
    os.chmod(init, 0o755)
    names = []
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for name in sorted(dirs) + sorted(files):
            names.append(os.path.normpath(os.path.join(rel, name)))
    archive = _run(['cpio', '--quiet', '-o', '-H', 'newc'], cwd=root,
                   stdin=('\n'.join(names) + '\n').encode(), raw=True)
    path = os.path.join(work, 'initrd.gz')
    with gzip.open(path, 'wb') as fh:
        fh.write(archive)
    return path


def _disk(work, vmlinuz, initrd):
    path = os.path.join(work, 'guest.raw')
    with open(path, 'wb') as fh:
        fh.truncate(DISK_MIB * 1024 * 1024)
    _run(['sfdisk', '--quiet', '--no-reread', '--no-tell-kernel', path],
         cwd=work, stdin=('label: dos\nstart=2048, size=%d, type=6, '
                          'bootable\n' % (PARTITION_KIB * 2)).encode())
    with open(MBR, 'rb') as fh:
        mbr = fh.read(440)
    with open(path, 'r+b') as fh:
        fh.write(mbr)
    _run(['mkfs.vfat', '-F', '16', '-n', 'NSEGUEST', '--offset', '2048',
          path, str(PARTITION_KIB)], cwd=work)
    cfg = os.path.join(work, 'syslinux.cfg')
    with open(cfg, 'w') as fh:
        fh.write('DEFAULT guest\nTIMEOUT 0\nPROMPT 0\nLABEL guest\n'
                 '  KERNEL /vmlinuz\n  APPEND initrd=/initrd.gz %s\n'
                 % KERNEL_ARGS)
    image = path + '@@1M'
    for src, name in ((vmlinuz, 'vmlinuz'), (initrd, 'initrd.gz'),
                      (cfg, 'syslinux.cfg')):
        _run(['mcopy', '-i', image, src, '::' + name], cwd=work)
    _run(['syslinux', '--offset', str(1024 * 1024), '--install', path],
         cwd=work)
    return path


#: :func:`.console.read_console`, the guest's console read (its home).
read_console = console.read_console


def main(argv=None):
    """Build (or find) the marker guest's disk and print its path.

    ``python -m nova_snapshot_ext.embedded.cloud.guest [DIRECTORY]``: for
    a staging cloud's Glance (the Tempest plugin's
    ``[nova_snapshot_ext] marker_image_ref``).  Exit 2 when a Debian
    package is missing (named with its install command), 1 when a build
    step fails.
    """
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1 or (argv and argv[0].startswith('-')):
        print('usage: python -m nova_snapshot_ext.embedded.cloud.guest '
              '[DIRECTORY]\nBuild the marker guest\'s raw disk (or find it '
              'built) in DIRECTORY (default %s) and print its path.'
              % cache_dir(), file=sys.stderr)
        return 0 if argv and argv[0] in ('-h', '--help') else 2
    try:
        print(ensure(argv[0] if argv else None))
    except GuestError as err:
        print(err, file=sys.stderr)
        return 1
    except proc_mod.CloudError as err:
        print(err, file=sys.stderr)
        return 2
    except OSError as err:
        print('cannot build the marker guest there: %s' % err,
              file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
