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

"""What makes an image provably this server's backup.

Nova's rotation trusts three properties anyone can write (``image_type``,
``backup_type``, ``instance_uuid``) and so deletes look-alikes (the
borrowed-identity field report).  The plugin deletes only an image that
proves it is a backup the plugin made for this server, in this project,
of this ``backup_type``:

* the snapshot fingerprint (:data:`~..snapshot.identity.FINGERPRINT_PROPERTY`)
  is present and is the fingerprint of the volume snapshot ids its own
  ``block_device_mapping`` names (a hand-edited mapping breaks it);
* the backup marker :data:`MARKER_PROPERTY` is
  ``uuid5(MARKER_NAMESPACE, "fingerprint|instance_uuid|backup_type")`` of
  the image's own values (a hand-edited ``instance_uuid`` or
  ``backup_type`` breaks it);
* ``image_type`` is ``backup``; ``instance_uuid`` and ``backup_type`` are
  the ones asked about, and ``owner`` is the new backup's owner as Glance
  shows it (Glance makes the creating project the owner; only an admin
  can change it).
"""

from __future__ import annotations

import json
import typing as ty
import uuid

from nova_snapshot_ext.snapshot import identity

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.snapshot import metadata as metadata_mod

#: The image property holding the backup marker.
MARKER_PROPERTY = 'snapshot_ext_backup'

#: uuid5 namespace of the marker (fixed forever).
MARKER_NAMESPACE = uuid.UUID('3d9b6f1e-8a2c-5f4d-b7e0-91c5a3d2e8f6')

#: Properties a backup cannot do without: without them neither Nova's
#: rotation nor the plugin's can count it.
REQUIRED_PROPERTIES = ('image_type', 'backup_type', 'instance_uuid',
                       identity.FINGERPRINT_PROPERTY, MARKER_PROPERTY)


def marker_of(fingerprint: str, instance_uuid: str, backup_type: str) -> str:
    """The backup marker of these values (a UUID string)."""
    text = '|'.join((fingerprint, instance_uuid, backup_type))
    return str(uuid.uuid5(MARKER_NAMESPACE, text))


def mark(record: metadata_mod.ImageRecord) -> None:
    """Stamp :data:`MARKER_PROPERTY` on a backup record (in place).

    The record must be identified (:func:`~..snapshot.identity.identify`)
    and carry ``image_type=backup``, ``backup_type`` and
    ``instance_uuid`` (the builder writes them for a request with a
    ``backup_type``).  The marker and the fingerprint become required:
    they are removed from ``record.optional``, so a full property quota
    refuses the backup instead of leaving it out of every rotation.

    :raises ValueError: the record is not a backup record (a bug of the
        caller, not an input error).
    """
    props = record.properties
    fp = props.get(identity.FINGERPRINT_PROPERTY)
    if props.get('image_type') != 'backup' or not fp or not props.get(
            'backup_type') or not props.get('instance_uuid'):
        raise ValueError('record %s is not an identified backup record'
                         % record.image_id)
    props[MARKER_PROPERTY] = marker_of(fp, props['instance_uuid'],
                                       props['backup_type'])
    record.optional[:] = [key for key in record.optional
                          if key not in REQUIRED_PROPERTIES]


def mapped_snapshot_ids(image: ty.Mapping[str, ty.Any]) -> list[str]:
    """The Cinder volume snapshot ids an image's mappings name, sorted.

    Reads ``block_device_mapping`` (a JSON string, as Nova writes it);
    an absent or unreadable value names none.
    """
    raw = image.get('block_device_mapping')
    try:
        mappings = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    if not isinstance(mappings, list):
        return []
    return sorted({str(m['snapshot_id']) for m in mappings
                   if isinstance(m, dict) and m.get('snapshot_id')})


def refusal(image: ty.Mapping[str, ty.Any], instance_uuid: str,
            backup_type: str, owner: str) -> str | None:
    """Why ``image`` is not provably this server's backup, or ``None``.

    :param image: a Glance image (``GET /v2/images`` entry).
    :param instance_uuid: the server.
    :param backup_type: the rotation's ``backup_type``.
    :param owner: the project owning the server's new backup.
    :returns: one sentence naming the first check that failed.
    """
    for key, wanted in (('image_type', 'backup'),
                        ('instance_uuid', instance_uuid),
                        ('backup_type', backup_type), ('owner', owner)):
        if image.get(key) != wanted:
            return '%s is %r, not %r' % (key, image.get(key), wanted)
    fp = image.get(identity.FINGERPRINT_PROPERTY)
    if not fp:
        return 'no %s: not made by the plugin' % (
            identity.FINGERPRINT_PROPERTY)
    if fp != identity.fingerprint_of(mapped_snapshot_ids(image)):
        return ('%s does not match the volume snapshots its '
                'block_device_mapping names' % identity.FINGERPRINT_PROPERTY)
    if image.get(MARKER_PROPERTY) != marker_of(fp, instance_uuid,
                                               backup_type):
        return ('%s does not match its instance_uuid and backup_type '
                '(edited after the backup was made, or not a backup made '
                'by the plugin)' % MARKER_PROPERTY)
    return None
