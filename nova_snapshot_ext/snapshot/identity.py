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

"""Which image is this snapshot's: the idempotency key and recognition.

A snapshot is identified by the Cinder volume snapshots its mappings point
at: the host takes them for this one snapshot operation, and their ids are
UUIDs nobody reuses.  From their sorted ids the plugin derives

* the **fingerprint**, ``uuid5(FINGERPRINT_NAMESPACE, "id1,id2,...")``,
  stamped on the image as the property :data:`FINGERPRINT_PROPERTY`;
* the **image id** when the caller gives none,
  ``uuid5(IMAGE_ID_NAMESPACE, fingerprint)``: every retry of the same
  snapshot -- any process, any host -- asks Glance for the same id;
* the ids of later attempts and generations (:func:`attempt_id`).

An existing image is this snapshot's when it carries the same fingerprint
*and* the same ``block_device_mapping``; never by id alone.  When the
fingerprint had to give way to a full property quota (preflight leaves it
out first, rather than refuse a snapshot Nova would take), the mappings --
which name this snapshot's volume snapshots -- and the whole record must
match.  An image with
this snapshot's fingerprint whose name or properties differ from the
record is a retry with a *changed* record: the plugin refuses it with
:class:`~nova_snapshot_ext.exception.SnapshotImageConflict` rather than
return the stale image or rewrite a finished one (see doc/source/attempts.rst).
"""

from __future__ import annotations

import collections.abc
import enum
import typing as ty
import uuid

from oslo_utils import uuidutils

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.snapshot import metadata as metadata_mod
    from nova_snapshot_ext.snapshot import plan as plan_mod

#: The image property holding the snapshot's fingerprint.
FINGERPRINT_PROPERTY = 'snapshot_ext_fingerprint'

#: uuid5 namespaces (fixed forever: changing one breaks idempotency).
FINGERPRINT_NAMESPACE = uuid.UUID('6f1c5d0e-3a8b-5b1e-9f64-2d7c1a0b9e11')
IMAGE_ID_NAMESPACE = uuid.UUID('0b7e4a52-9c3d-5e8f-a1b6-4c2d8e9f7a30')

#: How many fresh ids one planned attempt may use across retries: a try
#: that deleted its image after a transient fault burns one (Glance never
#: reuses an id), so the next retry moves on to the next generation.
GENERATIONS = 16


class Match(enum.Enum):
    """How an existing image relates to this snapshot's record."""

    #: Same fingerprint, mappings, name and properties: adopt it.
    OURS = 'ours'
    #: This snapshot's image, made from a different record (a retry with
    #: changed metadata or name): refused, never changed or deleted.
    CHANGED = 'changed'
    #: Not this snapshot's image: never touched.
    FOREIGN = 'foreign'


def snapshot_ids(record: metadata_mod.ImageRecord) -> list[str]:
    """The sorted volume snapshot ids of the record's mappings."""
    # A dict (what the builder and JSON make) is asked by its type: an
    # ABC's isinstance runs Python code, a microsecond per mapping.
    return sorted({str(m['snapshot_id']) for m in record.mappings
                   if (type(m) is dict or
                       isinstance(m, collections.abc.Mapping))
                   and m.get('snapshot_id')})


def fingerprint(record: metadata_mod.ImageRecord) -> str | None:
    """The snapshot's fingerprint, or ``None`` without snapshot ids."""
    return fingerprint_of(snapshot_ids(record))


def fingerprint_of(ids: ty.Iterable[str]) -> str | None:
    """The fingerprint of a set of volume snapshot ids (``None``: empty).

    :param ids: Cinder volume snapshot ids, in any order.
    """
    ids = sorted(set(ids))
    if not ids:
        return None
    return str(uuid.uuid5(FINGERPRINT_NAMESPACE, ','.join(ids)))


def derived_image_id(record: metadata_mod.ImageRecord) -> str:
    """The image id of a snapshot whose caller chose none.

    :returns: ``uuid5(IMAGE_ID_NAMESPACE, fingerprint)``; a random UUID
        when the mappings carry no snapshot id (nothing to derive from).
    """
    return image_id_of(fingerprint(record))


def image_id_of(fp: str | None) -> str:
    """The image id derived from fingerprint ``fp``.

    :param fp: :func:`fingerprint` of a record.
    :returns: ``uuid5(IMAGE_ID_NAMESPACE, fp)``; a random UUID when ``fp``
        is ``None`` (nothing to derive from).
    """
    if fp is None:
        return uuidutils.generate_uuid()
    return str(uuid.uuid5(IMAGE_ID_NAMESPACE, fp))


def identify(record: metadata_mod.ImageRecord) -> None:
    """Give ``record`` its id (when it has none) and its fingerprint.

    In place: ``record.image_id`` becomes :func:`image_id_of` the
    fingerprint unless the host chose one; :data:`FINGERPRINT_PROPERTY` is
    stamped (:func:`stamp`).  The fingerprint is computed once for both.
    """
    fp = fingerprint(record)
    if not record.image_id:
        record.image_id = image_id_of(fp)
    stamp(record, fp)


def stamp(record: metadata_mod.ImageRecord, fp: str | None) -> None:
    """Set :data:`FINGERPRINT_PROPERTY` on the record (in place).

    Any value the record inherited (an image booted from another snapshot)
    is replaced: it described another snapshot.

    :param fp: the record's :func:`fingerprint` (``None``: it has none,
        and the property is removed).
    """
    if fp is None:
        record.properties.pop(FINGERPRINT_PROPERTY, None)
        return
    record.properties[FINGERPRINT_PROPERTY] = fp
    # Bookkeeping gives way to a full property quota (preflight leaves it
    # out rather than refuse a snapshot Nova would take), first: what the
    # image says about itself (image_type...) matters more to its users;
    # recognition then falls back to the mappings and the whole record.
    optional = getattr(record, 'optional', None)
    if isinstance(optional, list):
        if FINGERPRINT_PROPERTY in optional:
            optional.remove(FINGERPRINT_PROPERTY)
        optional.insert(0, FINGERPRINT_PROPERTY)


def attempt_id(record: metadata_mod.ImageRecord, index: int,
               planned: plan_mod.PlannedAttempt,
               generation: int = 0) -> str:
    """The image id of attempt ``index``, generation ``generation``.

    Generation 0 of the first attempt is the record's id (the caller's,
    or :func:`derived_image_id`).  Every other slot is derived from it
    with uuid5 over ``"index:method:disk_format"`` (plus ``":gN"`` for
    generation N > 0), so that every try computes the same ids and finds
    the image another try made instead of making a second one.
    """
    if index == 0 and generation == 0 and record.image_id:
        return record.image_id
    if not uuidutils.is_uuid_like(record.image_id):
        return uuidutils.generate_uuid()
    name = '%d:%s:%s' % (index, planned.method, planned.disk_format)
    if generation:
        name += ':g%d' % generation
    return str(uuid.uuid5(uuid.UUID(record.image_id), name))


def _same(value: ty.Any, wanted: ty.Any) -> bool:
    if value is None:
        return wanted is None
    return str(value) == str(wanted)


def differences(image: ty.Mapping[str, ty.Any],
                record: metadata_mod.ImageRecord) -> list[str]:
    """Names of the record's attributes the image holds differently.

    Compares ``name``, ``min_ram``, ``min_disk`` and every property the
    record sets (properties the image has beyond the record are Glance's
    or were added later by someone else, and are not compared).
    """
    diffs = []
    for key, wanted in (('name', record.name), ('min_ram', record.min_ram),
                        ('min_disk', record.min_disk)):
        if not _same(image.get(key), wanted):
            diffs.append(key)
    props = record.properties_for(str(image.get('id') or record.image_id))
    for key, wanted in sorted(props.items()):
        if not _same(image.get(key), wanted):
            diffs.append(key)
    return diffs


def recognise(image: ty.Mapping[str, ty.Any],
              record: metadata_mod.ImageRecord) -> tuple[Match, list[str]]:
    """Is ``image`` this snapshot's image, made from this record?

    ``OURS``: same mappings, same record.  ``CHANGED``: this snapshot's
    (same mappings, or the same fingerprint -- the same volume snapshots)
    but the record differs.  ``FOREIGN``: anything else.

    :returns: ``(Match, differing attribute names)``.
    """
    fp = record.properties.get(FINGERPRINT_PROPERTY)
    mappings = record.properties.get('block_device_mapping')
    same_mappings = mappings is not None and (
        image.get('block_device_mapping') == mappings)
    held = image.get(FINGERPRINT_PROPERTY)
    if not same_mappings:
        if fp and held == fp:
            # The same volume snapshots, mapped differently (a retry whose
            # volume_size or device_name changed): this snapshot's image,
            # from another record -- refused, never rewritten.
            return Match.CHANGED, differences(image, record)
        return Match.FOREIGN, []
    if fp and held != fp and (held or image.get('status') != 'active'):
        # Another snapshot's; or an unfinished image this snapshot cannot
        # prove it made (never activated, never deleted by us).
        return Match.FOREIGN, []
    # Without a fingerprint (left out at a full property quota, or removed
    # from a finished image later, e.g. by ``audit --fix``) the mappings
    # -- which name this snapshot's volume snapshots -- and the rest of
    # the record must match; a finished image is then only reported.
    diffs = [d for d in differences(image, record)
             if held or d != FINGERPRINT_PROPERTY]
    if diffs:
        return Match.CHANGED, diffs
    return Match.OURS, []
