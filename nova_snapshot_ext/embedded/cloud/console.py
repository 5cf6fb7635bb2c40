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

"""What the marker guest's serial console says, read.

The guest (:mod:`.guest`) prints one ``NSE-...`` line per fact: its boot,
each disk and its marker, what its log filesystem held at boot, the
writer's progress, each freeze and thaw.  :func:`read_console` turns a
console's text (``os-getConsoleOutput``) into one dict, for the tests and
the Tempest plugin's judge.
"""

import re

#: One thing the guest says; a whole word (nothing glued before or after:
#: a longer marker or ``XNSE-READ`` is not one).
_TOKEN = re.compile(
    r'(?<![\w-])NSE-(?:'
    r'BOOT (?P<boot>[0-9a-f]{16})|'
    r'DISK (?P<disk>vd[a-z]+) (?P<size>\d+)|'
    r'(?P<how>READ|WROTE) (?P<on>vd[a-z]+) (?P<marker>NSEMARK-[0-9a-f]{24})|'
    r'FSFREEZE (?P<freeze>freeze|thaw)(?: (?P<written>\d+))?|'
    r'JOURNAL (?P<jdisk>vd[a-z]+) (?P<journal>clean|recovery|foreign)|'
    r'FSCK (?P<fdisk>vd[a-z]+) (?P<fsck>\d+)|'
    r'LOG (?P<ldisk>vd[a-z]+) (?P<records>\d+) (?P<log>ok|torn)|'
    r'WRITTEN (?P<wdisk>vd[a-z]+) (?P<progress>\d+)|'
    r'(?P<done>DONE)'
    r')(?![\w-])')
#: Terminal control sequences (syslinux and the kernel clear the screen).
_ESCAPES = re.compile(r'\x1b(\[[0-?]*[ -/]*[@-~]|[@-Z\\-_]|c)')


def read_console(text):
    """What the guest's console says about its disks.

    :param text: the console output (``os-getConsoleOutput``).
    :returns: ``{'boot': id or None, 'done': bool, 'disks': {'vda':
        sectors, ...}, 'markers': {'vda': ('READ' or 'WROTE', marker),
        ...}, 'freezes': ['freeze', 'thaw', ...], 'written': [records,
        ...], 'filesystems': {'vdb': {'journal': 'clean', 'recovery' or
        'foreign' (neither ext4 nor blank: left alone),
        'fsck': e2fsck's exit status, 'records': count, 'log': 'ok' or
        'torn'}}, 'progress': {'vdb': records}}``: the last boot's lines
        only (a console may hold several boots).  ``freezes`` is in the
        order the agent's fsfreeze hook printed them, ``written`` beside
        it: how many records the writer had appended when the hook ran
        (None: the line gave no count, as a guest built before it did).
        ``filesystems`` is what the guest found on the log disk at boot,
        before mounting it: the ext4 superblock's needs-recovery flag,
        ``e2fsck -fn``'s status (0: clean) and the log's complete,
        numbered records (``torn``: a record cut short, out of order or
        garbage); ``progress`` the records the writer had appended when
        it last said so (every
        :data:`~.guest.PROGRESS_EVERY`).
    """
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    said = _new_boot(None)
    for token in _TOKEN.finditer(_ESCAPES.sub('', text)):
        found = token.groupdict()
        if found['boot']:
            said = _new_boot(found['boot'])
        elif found['disk']:
            said['disks'][found['disk']] = int(found['size'])
        elif found['marker']:
            said['markers'][found['on']] = (found['how'], found['marker'])
        elif found['freeze']:
            said['freezes'].append(found['freeze'])
            said['written'].append(int(found['written'])
                                   if found['written'] else None)
        elif found['jdisk']:
            _filesystem(said, found['jdisk'])['journal'] = found['journal']
        elif found['fdisk']:
            _filesystem(said, found['fdisk'])['fsck'] = int(found['fsck'])
        elif found['wdisk']:
            said['progress'][found['wdisk']] = int(found['progress'])
        elif found['ldisk']:
            _filesystem(said, found['ldisk']).update(
                records=int(found['records']), log=found['log'])
        else:
            said['done'] = True
    return said


def _new_boot(boot):
    return {'boot': boot, 'done': False, 'disks': {}, 'markers': {},
            'freezes': [], 'written': [], 'filesystems': {}, 'progress': {}}


def _filesystem(said, disk):
    return said['filesystems'].setdefault(disk, {})
