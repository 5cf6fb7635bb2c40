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
  ``uuid5(MARKER_NAMESPACE, "fingerprint|instance_uuid|backup_type|id")``
  of the image's own values and its own Glance id (a hand-edited
  ``instance_uuid`` or ``backup_type`` breaks it, and so does copying a
  backup's properties onto another image: the copy has another id);
* the image's data is one of the plugin's honest empty payloads
  (:func:`payload_refusal`): an image holding data is never a backup the
  plugin made, whatever its properties say;
* ``image_type`` is ``backup``; ``instance_uuid`` and ``backup_type`` are
  the ones asked about, and ``owner`` is the new backup's owner as Glance
  shows it (Glance makes the creating project the owner; only an admin
  can change it).

The marker is not a secret (anyone can compute it); it proves the
properties were written for this very image, not copied from another one.
A member who computes it for an empty image of their own could equally
delete a backup directly: rotation gains no power they lack.  Backups
marked before the marker named the image id are not recognised (left and
named): their marker cannot tell them from a copy.
"""

from __future__ import annotations

import functools
import hashlib
import json
import typing as ty
import uuid

from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.snapshot import identity
from nova_snapshot_ext.snapshot import tags

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


#: Properties a proven backup carries as its own (audit does not call them
#: borrowed on an image :func:`proof_refusal` accepts).
OWN_PROPERTIES = ('image_type', 'backup_type', 'instance_uuid', 'user_id')


def marker_of(fingerprint: str, instance_uuid: str, backup_type: str,
              image_id: str) -> str:
    """The backup marker of these values (a UUID string).

    :param image_id: the Glance id of the image the marker is for.
    """
    text = '|'.join((fingerprint, instance_uuid, backup_type, image_id))
    return str(uuid.uuid5(MARKER_NAMESPACE, text))


def _legacy_marker_of(fingerprint: str, instance_uuid: str,
                      backup_type: str) -> str:
    # The marker before it named the image id (only to say why such a
    # backup is left).
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
    stamp = functools.partial(marker_of, fp, props['instance_uuid'],
                              props['backup_type'])
    # The id of a fallback attempt differs from the record's: the marker
    # is stamped per created image (ImageRecord.create_kwargs).
    props[MARKER_PROPERTY] = stamp(record.image_id)
    record.id_bound[MARKER_PROPERTY] = stamp
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


#: One key per Cinder snapshot, whichever spelling names it (its home is
#: :func:`~..snapshot.tags.snapshot_key`, where the image tags are made).
snapshot_key = tags.snapshot_key


@functools.lru_cache(maxsize=None)
def _payload_digests(disk_format: str) -> frozenset[str]:
    data = payloads.payload(disk_format)
    return frozenset(hashlib.new(algo, data).hexdigest()
                     for algo in ('md5', 'sha256', 'sha512'))


def payload_refusal(image: ty.Mapping[str, ty.Any]) -> str | None:
    """Why ``image``'s data is not one the plugin activates with, or None.

    The plugin activates a backup with zero bytes of ``raw``, with the
    payload :func:`~..image.payloads.payload` builds for its
    ``disk_format`` (same size; same ``checksum``/``os_hash_value`` when
    Glance shows them), or with a location object that is such a payload.
    Anything else holds data: deleting it could lose data, so it is never
    counted as a backup.

    :param image: a Glance image (``GET /v2/images`` entry).
    :returns: one sentence, or ``None``.
    """
    size = image.get('size')
    disk_format = image.get('disk_format')
    if disk_format not in payloads.SUPPORTED_FORMATS:
        return ('disk_format %r has no plugin payload: not a backup the '
                'plugin made' % disk_format)
    wanted = payloads.payload_size(disk_format)
    if size is None or int(size) != wanted:
        return ('its size is %r bytes, not the %d of the plugin\'s empty %s '
                'payload: it holds data' % (size, wanted, disk_format))
    digests = _payload_digests(disk_format)
    for key in ('checksum', 'os_hash_value'):
        held = image.get(key)
        if held and str(held).lower() not in digests:
            return ('its %s is not that of the plugin\'s empty %s payload: '
                    'it holds data' % (key, disk_format))
    return None


def proof_refusal(image: ty.Mapping[str, ty.Any]) -> str | None:
    """Why ``image`` is not provably one of the plugin's backups, or None.

    Judges the image alone (any server, ``backup_type`` or owner): the
    fingerprint, the id-bound marker and the payload.  :func:`refusal`
    adds the server, ``backup_type`` and owner asked about; the audit
    uses this one to know an image's ``image_type``/``backup_type``/
    ``instance_uuid``/``user_id`` are its own.

    :param image: a Glance image (``GET /v2/images`` entry).
    :returns: one sentence naming the first check that failed.
    """
    if image.get('image_type') != 'backup':
        return 'image_type is %r, not %r' % (image.get('image_type'),
                                             'backup')
    fp = image.get(identity.FINGERPRINT_PROPERTY)
    if not fp:
        return 'no %s: not made by the plugin' % (
            identity.FINGERPRINT_PROPERTY)
    if fp != identity.fingerprint_of(mapped_snapshot_ids(image)):
        return ('%s does not match the volume snapshots its '
                'block_device_mapping names' % identity.FINGERPRINT_PROPERTY)
    instance_uuid = str(image.get('instance_uuid'))
    backup_type = str(image.get('backup_type'))
    held = image.get(MARKER_PROPERTY)
    if held != marker_of(fp, instance_uuid, backup_type,
                         str(image.get('id'))):
        if held == _legacy_marker_of(fp, instance_uuid, backup_type):
            return ('%s does not name the image id (marked before '
                    'markers did, or copied from such a backup): it '
                    'cannot be told from a copy; delete it by hand when '
                    'no longer wanted' % MARKER_PROPERTY)
        return ('%s does not match its id, instance_uuid and backup_type '
                '(copied from another image, edited after the backup was '
                'made, or not a backup made by the plugin)'
                % MARKER_PROPERTY)
    return payload_refusal(image)


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
    return proof_refusal(image)
