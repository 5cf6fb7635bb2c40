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

"""Judging a volume-backed snapshot image from what Glance shows.

Pure functions over the image as Glance's v2 API returns it (a dict with
the properties flattened) and over the bytes Glance serves for it: no
client, no Tempest, so that the unit tests can check the judge itself.
Each check returns a list of problems, one sentence each, so that a
failing test says everything that is wrong at once.
"""

import json
import os
import tempfile

from oslo_utils.imageutils import format_inspector

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.embedded.cloud import guest

#: The entry kinds that name a volume snapshot in an image's mapping.
_SNAPSHOT = 'snapshot'


def mapping(image):
    """The image's ``block_device_mapping`` as a list of dicts.

    :param image: the image as Glance v2 shows it.
    :returns: a list (empty when the image has no mapping).
    :raises ValueError: if the property is not a JSON list of objects.
    """
    raw = image.get('block_device_mapping')
    if raw in (None, ''):
        return []
    value = json.loads(raw) if isinstance(raw, str) else raw
    if (not isinstance(value, list)
            or not all(isinstance(e, dict) for e in value)):
        raise ValueError('block_device_mapping is not a list of objects: %r'
                         % (raw,))
    return value


def snapshot_ids(image):
    """The volume snapshot ids the image's mapping names, boot disk first.

    :param image: the image as Glance v2 shows it.
    :returns: a list of ids, in mapping order with ``boot_index`` 0 first.
    """
    entries = [e for e in mapping(image)
               if e.get('source_type') == _SNAPSHOT and e.get('snapshot_id')]
    entries.sort(key=lambda e: 0 if _boot_index(e) == 0 else 1)
    return [e['snapshot_id'] for e in entries]


def _boot_index(entry):
    try:
        return int(entry.get('boot_index'))
    except (TypeError, ValueError):
        return None


def mapping_problems(image, volumes):
    """What is wrong with the image's mapping for a server with ``volumes``.

    :param image: the image as Glance v2 shows it.
    :param volumes: how many volumes the snapshotted server had.
    :returns: a list of sentences (empty: the mapping is sound).
    """
    try:
        entries = mapping(image)
    except ValueError as exc:
        return [str(exc)]
    problems = []
    if image.get('bdm_v2') != 'True':
        problems.append('bdm_v2 is %r, not "True"' % (image.get('bdm_v2'),))
    snaps = [e for e in entries if e.get('source_type') == _SNAPSHOT]
    if len(snaps) != volumes:
        problems.append('the mapping names %d volume snapshots for a server '
                        'with %d volumes: %s' % (len(snaps), volumes,
                                                 entries))
    boots = [e for e in entries if _boot_index(e) == 0]
    if len(boots) != 1 or boots[0].get('source_type') != _SNAPSHOT:
        problems.append('the mapping has no single boot_index 0 entry made '
                        'from a volume snapshot: %s' % (entries,))
    for entry in entries:
        if entry.get('source_type') == 'volume' or entry.get('volume_id'):
            problems.append('an entry would give a new server a live '
                            'volume: %s' % (entry,))
        if entry.get('connection_info'):
            problems.append('an entry carries connection_info: %s'
                            % (entry.get('device_name'),))
        if (entry.get('source_type') == _SNAPSHOT
                and not entry.get('snapshot_id')):
            problems.append('a snapshot entry has no snapshot_id: %s'
                            % (entry,))
        if (entry.get('source_type') == _SNAPSHOT
                and entry.get('destination_type') != 'volume'):
            problems.append('a snapshot entry is not destined to a volume: '
                            '%s' % (entry,))
    return problems


def payload_problems(image, allowed_formats=(), expected_formats=(),
                     max_size=65536, root_size_gb=None):
    """What is dishonest about a metadata-only snapshot image's payload.

    :param image: the image as Glance v2 shows it.
    :param allowed_formats: the ``disk_format`` values this Glance's image
        schema allows (empty: not checked).
    :param expected_formats: the values this cloud's operator expects
        (empty: any allowed one).
    :param max_size: the largest honest empty payload, in bytes.
    :param root_size_gb: the snapshotted root volume's size (GiB), which
        ``min_disk`` must not exceed (None: not checked).
    :returns: a list of sentences (empty: honest).
    """
    problems = []
    status = image.get('status')
    if status != 'active':
        problems.append('status is %r, not active' % (status,))
    disk_format = image.get('disk_format')
    size = image.get('size')
    if image.get('container_format') != 'bare':
        problems.append('container_format is %r, not bare'
                        % (image.get('container_format'),))
    if not disk_format:
        problems.append('no disk_format')
    elif allowed_formats and disk_format not in allowed_formats:
        problems.append('disk_format %s is not one this Glance allows (%s)'
                        % (disk_format, ', '.join(allowed_formats)))
    if disk_format and expected_formats and (
            disk_format not in expected_formats):
        problems.append('disk_format %s is not one expected here (%s)'
                        % (disk_format, ', '.join(expected_formats)))
    if not isinstance(size, int) or isinstance(size, bool):
        problems.append('size is %r, not a number of bytes' % (size,))
    else:
        if size == 0 and disk_format not in (None, 'raw'):
            problems.append('zero bytes labelled %s (only raw is true of '
                            'zero bytes)' % disk_format)
        if size > 0 and disk_format == 'raw':
            problems.append('%d bytes labelled raw: a metadata-only image '
                            'holds no disk data' % size)
        if size > max_size:
            problems.append('size %d is more than an empty payload (%d)'
                            % (size, max_size))
    min_disk = image.get('min_disk')
    if root_size_gb is not None and isinstance(min_disk, int) and (
            min_disk > root_size_gb):
        problems.append('min_disk %d is above the root volume\'s %d GiB'
                        % (min_disk, root_size_gb))
    return problems


#: What oslo.utils' format inspector (the one Glance runs on uploads) must
#: see in an honest payload of each ``disk_format``: Glance has no ploop
#: inspector, so a Parallels image must look raw to it.
INSPECTOR_SEES = {'ploop': 'raw'}


def data_problems(image, data):
    """What is dishonest about the bytes Glance serves for the image.

    :param image: the image as Glance v2 shows it (``size``,
        ``disk_format``).
    :param data: the bytes of ``GET /v2/images/{id}/file``.
    :returns: a list of sentences (empty: the bytes are what the image
        says: ``size`` of them, none for ``raw``, else a valid image of
        ``disk_format`` by oslo.utils' format inspector, its safety check
        passed).
    """
    problems = []
    disk_format = image.get('disk_format')
    if image.get('size') != len(data):
        problems.append('Glance says size %r, its download has %d bytes'
                        % (image.get('size'), len(data)))
    if disk_format == 'raw' or not data:
        if data:
            problems.append('%d bytes labelled raw: a metadata-only image '
                            'holds no disk data' % len(data))
        elif disk_format not in (None, 'raw'):
            problems.append('zero bytes labelled %s (only raw is true of '
                            'zero bytes)' % disk_format)
        return problems
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'payload')
        with open(path, 'wb') as fh:
            fh.write(data)
        inspector = format_inspector.detect_file_format(path)
        seen = str(inspector)
        expected = INSPECTOR_SEES.get(disk_format, disk_format)
        if seen != expected:
            problems.append('the bytes are %s to the format inspector, '
                            'not %s' % (seen, expected))
        else:
            try:
                inspector.safety_check()
            except format_inspector.SafetyCheckFailed as err:
                problems.append('the %s payload fails the format '
                                "inspector's safety check: %s"
                                % (disk_format, err))
    return problems


def schema_disk_formats(schema):
    """The ``disk_format`` values a Glance image schema allows.

    :param schema: the body of ``GET /v2/schemas/image``.
    :returns: a tuple of strings (the schema's ``null`` dropped).
    """
    prop = schema.get('properties', {}).get('disk_format', {})
    return tuple(v for v in prop.get('enum') or () if v)


def rotation_kept(backups, rotation):
    """The backups a rotation keeps: the ``rotation`` newest.

    :param backups: ids, oldest first.
    :param rotation: the rotation asked for (0 and 1 both keep one).
    :returns: a list of ids, oldest first.
    """
    return list(backups[-max(rotation, 1):])


def copies_of(backups, image_id):
    """The Cinder backups recorded as copies of one backup image.

    :param backups: Cinder backup documents with ``metadata``
        (``GET /backups/detail`` at volume microversion 3.43 or later).
    :param image_id: the backup image.
    :returns: those whose record names it, in the order given.
    """
    return [b for b in backups
            if (b.get('metadata') or {}).get(copies.IMAGE_KEY) == image_id]


def copy_problems(image, server_id, found):
    """What is wrong with a backup image's copies off the primary storage.

    One ``available`` copy per volume snapshot the image's mapping names,
    none of another, each recording the server, the disk's device name
    and boot index, and how many disks the image has
    (doc/source/backups.rst, "Where the record lives").

    :param image: the backup image as Glance v2 shows it.
    :param server_id: the server backed up.
    :param found: :func:`copies_of` the image.
    :returns: a list of sentences (empty: every disk has its copy).
    """
    try:
        entries = [e for e in mapping(image)
                   if e.get('source_type') == _SNAPSHOT]
    except ValueError as exc:
        return [str(exc)]
    problems = []
    by_snapshot = {}
    for backup in found:
        by_snapshot.setdefault(backup.get('snapshot_id'), []).append(backup)
    for entry in entries:
        made = by_snapshot.pop(entry.get('snapshot_id'), [])
        if len(made) != 1:
            problems.append('%d copies of volume snapshot %s (%s), not 1'
                            % (len(made), entry.get('snapshot_id'),
                               entry.get('device_name')))
            continue
        backup = made[0]
        meta = backup.get('metadata') or {}
        if backup.get('status') != 'available':
            problems.append('the copy %s of %s is %s: %s' % (
                backup.get('id'), entry.get('device_name'),
                backup.get('status'), backup.get('fail_reason')))
        index = _boot_index(entry)
        wanted = {copies.SERVER_KEY: server_id,
                  copies.DEVICE_KEY: entry.get('device_name') or '',
                  copies.BOOT_INDEX_KEY: str(
                      index if index is not None and index >= 0 else -1),
                  copies.SET_SIZE_KEY: str(len(entries))}
        for key, value in sorted(wanted.items()):
            if meta.get(key) != value:
                problems.append('the copy %s records %s = %r, not %r' % (
                    backup.get('id'), key, meta.get(key), value))
    for snapshot_id, extra in sorted(by_snapshot.items(),
                                     key=lambda i: str(i[0])):
        problems.append('copies of volume snapshot %s, which the image '
                        'does not name: %s' % (
                            snapshot_id, [b.get('id') for b in extra]))
    return problems


def console_markers(output):
    """What the marker guest's console says (one boot, the last).

    :param output: ``os-getConsoleOutput``'s text.
    :returns: :func:`nova_snapshot_ext.embedded.cloud.guest.read_console`'s
        dict: ``boot``, ``done``, ``disks``, ``markers``, ``freezes``,
        ``written``, ``filesystems`` and ``progress``.
    """
    return guest.read_console(output or '')


def marker_problems(source, copy):
    """How a copy's console differs from its source's markers.

    :param source: :func:`console_markers` of the source server (each disk
        ``WROTE`` or ``READ`` a marker).
    :param copy: :func:`console_markers` of the server booted from the
        snapshot image.
    :returns: a list of sentences (empty when every disk of the source
        reads, at the same device name, the marker the source had there,
        on a disk at least as large as the source's).
    """
    if not source['markers']:
        return ['the source showed no marker: nothing to compare']
    problems = []
    for disk, (_how, marker) in sorted(source['markers'].items()):
        found = copy['markers'].get(disk)
        if found is None:
            problems.append('%s: the copy shows no marker (disks seen: %s)'
                            % (disk, ', '.join(sorted(copy['disks'])) or
                               'none'))
        elif tuple(found) != ('READ', marker):
            problems.append('%s: the source had %s, the copy %s %s' % (
                disk, marker, found[0].lower(), found[1]))
        size, copied = source['disks'].get(disk), copy['disks'].get(disk)
        if size is not None and copied is not None and copied < size:
            problems.append('%s: the copy\'s disk has %d sectors, the '
                            'source\'s %d' % (disk, copied, size))
    return problems


def consistency_problems(source, copy, disk=guest.LOG_DISK):
    """How a quiesced snapshot of the writing guest fails to be consistent.

    :param source: :func:`console_markers` of the source server read after
        the snapshot: its agent's ``freeze`` and ``thaw`` with the records
        the guest had written at each.
    :param copy: :func:`console_markers` of the server booted from the
        snapshot image: what it found on ``disk``'s log filesystem.
    :returns: a list of sentences (empty when the copy's journal is
        clean, ``e2fsck -fn`` found nothing, and the log holds every
        record written before the freeze and no more than at the thaw,
        none cut short).  One sentence when the source shows no freeze
        and thaw (its image lacks ``hw_qemu_guest_agent=yes``): then no
        consistency can be claimed.
    """
    if source['freezes'][-2:] != ['freeze', 'thaw']:
        return ['the source shows no freeze and thaw (%s): no quiesce to '
                'judge' % (' '.join(source['freezes']) or 'none')]
    at_freeze, at_thaw = source['written'][-2:]
    if at_freeze is None or at_thaw is None:
        return ['the source\'s freeze and thaw lines give no record count '
                '(a marker guest built before the log): rebuild it']
    found = copy['filesystems'].get(disk)
    if found is None:
        return ['%s: the copy shows no log filesystem' % disk]
    if found.get('journal') == 'foreign':
        return ['%s: the copy holds a filesystem that is not the marker '
                'guest\'s log' % disk]
    if not {'journal', 'fsck', 'records', 'log'} <= set(found):
        return ['%s: the copy\'s console lacks %s' % (disk, ', '.join(
            sorted({'journal', 'fsck', 'records', 'log'} - set(found))))]
    problems = []
    if found['journal'] != 'clean':
        problems.append('%s: the journal needs recovery: the snapshot was '
                        'not taken while the filesystem was frozen' % disk)
    if found['fsck'] != 0:
        problems.append('%s: e2fsck -fn exited with %s' % (disk,
                                                           found['fsck']))
    if found['log'] != 'ok':
        problems.append('%s: a log record is cut short or out of order'
                        % disk)
    records = found['records']
    if not at_freeze <= records <= at_thaw:
        problems.append('%s: the log holds %d records; the guest had '
                        'written %d at the freeze and %d at the thaw'
                        % (disk, records, at_freeze, at_thaw))
    return problems
