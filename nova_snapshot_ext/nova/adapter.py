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

"""Conversions between Nova's data and the plugin's.

Three directions, each a pure function (Nova is imported lazily, only by
:func:`to_nova_exception`):

* :class:`NovaImageMeta` - the image metadata Nova built for a
  volume-backed snapshot, *after* Nova's own ``_translate_to_glance``
  (flat, every property a string, ``block_device_mapping`` a JSON string,
  ``bdm_v2 = 'True'``, ``min_ram``/``min_disk`` ints), read once; its
  :meth:`~NovaImageMeta.record` is an
  :class:`~nova_snapshot_ext.snapshot.metadata.ImageRecord` without
  re-encoding anything, so the image carries Nova's exact encodings;
* :func:`request_from_nova` - a Nova ``Instance`` and its
  ``BlockDeviceMappingList`` (plus the ``createImage`` body and the request
  context) become a
  :class:`~nova_snapshot_ext.snapshot.request.SnapshotRequest` for the
  early preflight, with placeholder snapshot ids;
* :func:`to_nova_exception` - the plugin's exceptions become the Nova
  exceptions Nova's API already maps to HTTP statuses.
"""

from __future__ import annotations

import dataclasses
import typing as ty

from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import deletion
from nova_snapshot_ext.snapshot import mappings as mappings_mod
from nova_snapshot_ext.snapshot import metadata as metadata_mod
from nova_snapshot_ext.snapshot import request as request_mod

LOG = logging.getLogger(__name__)

#: Keys of Nova's translated metadata that are Glance base attributes the
#: record holds itself; every other key is a custom property.
RECORD_ATTRIBUTES = ('id', 'name', 'visibility', 'min_ram', 'min_disk')

#: Keys whose presence means the create is *not* a plain volume-backed
#: snapshot activation (the caller chose a format or a location); the hook
#: leaves such a create to Nova.
NOT_OURS_KEYS = ('disk_format', 'container_format', 'location')

#: Fields of Nova's ``BlockDeviceMapping`` object read for the preflight
#: (the fields of :class:`~.request.BlockDeviceMapping`).
BDM_FIELDS = (
    'source_type', 'destination_type', 'boot_index', 'device_name',
    'disk_bus', 'device_type', 'guest_format', 'volume_id', 'snapshot_id',
    'image_id', 'volume_size', 'delete_on_termination', 'no_device', 'tag',
    'volume_type', 'encrypted', 'encryption_secret_uuid',
    'encryption_format', 'encryption_options')


@dataclasses.dataclass(frozen=True)
class NovaImageMeta:
    """Nova's translated image metadata of one create, read once.

    What Nova's ``_translate_to_glance(image_meta)`` returns for
    ``snapshot_volume_backed`` (flat, every property a string,
    ``block_device_mapping`` a JSON string), e.g.::

        {'name': 'snap', 'visibility': 'private', 'min_ram': 512,
         'min_disk': 10, 'root_device_name': '/dev/vda',
         'block_device_mapping': '[{"source_type": "snapshot", ...}]',
         'bdm_v2': 'True', 'os_distro': 'ubuntu'}

    Build it with :meth:`read`; the hook asks it (:attr:`plain`,
    :attr:`snapshot_ids`, :meth:`record`) instead of parsing the dict
    again.

    :ivar sent: the metadata, ``instance_owner`` removed.
    :ivar member: Nova's ``instance_owner`` (the project to share the
        image with), or None.
    :ivar entries: ``block_device_mapping`` decoded (a list; ``[]`` when
        absent), or None when it cannot be read.
    :ivar mapping_error: why it cannot be read, or None.
    """

    sent: ty.Mapping[str, ty.Any]
    member: str | None = None
    entries: list[ty.Any] | None = dataclasses.field(default_factory=list)
    mapping_error: str | None = None

    @classmethod
    def read(cls, sent: ty.Mapping[str, ty.Any],
             member: str | None = None) -> NovaImageMeta:
        """Read Nova's metadata once.

        :param sent: as above, without ``instance_owner`` (pass it as
            ``member``).
        :returns: a :class:`NovaImageMeta`; an unreadable
            ``block_device_mapping`` is recorded, not raised (only
            :meth:`record` refuses it).
        """
        encoded = sent.get('block_device_mapping')
        entries: ty.Any = [] if encoded is None else encoded
        error = None
        if isinstance(encoded, str):
            try:
                entries = jsonutils.loads(encoded)
            except ValueError as err:
                entries, error = None, 'not valid JSON: %s' % err
        if entries is not None and not isinstance(entries, list):
            entries, error = None, 'must be a JSON list'
        return cls(sent=sent, member=member, entries=entries,
                   mapping_error=error)

    @property
    def plain(self) -> bool:
        """Whether the plugin activates this create.

        False when it names a ``disk_format``, ``container_format`` or
        ``location`` (Nova keeps its own behaviour for those).
        """
        return not any(key in self.sent for key in NOT_OURS_KEYS)

    @property
    def name(self) -> str:
        """The image's name (``''`` when Nova gave none)."""
        return self.sent.get('name') or ''

    @property
    def snapshot_ids(self) -> list[str | None] | None:
        """The volume snapshot ids Nova put in the mapping, in order.

        :returns: the ``snapshot_id`` of every ``source_type=snapshot``
            volume entry, in Nova's order (the order of the server's
            volume BDMs), or None when the mapping cannot be read.
        """
        if self.entries is None:
            return None
        return [e.get('snapshot_id') for e in self.entries
                if isinstance(e, dict) and
                e.get('source_type') == 'snapshot' and
                e.get('destination_type') == 'volume']

    def record(self, non_inheritable: ty.Collection[str] = ()
               ) -> metadata_mod.ImageRecord:
        """The image record built from the metadata itself.

        :param non_inheritable: ``[snapshot_ext] non_inheritable_image_
            properties``.  Every key of a never-inherited kind
            (:func:`~.metadata.never_inherited_kind`: Nova's copies of
            non-image system metadata such as ``vtpm_secret_uuid`` or
            ``owner_user_name``, inherited ownership, identity,
            provenance, status markers...) is dropped, except the mapping
            keys Nova built from the server.  This is the fallback of the
            hook when it cannot rebuild the record with the one builder;
            Nova's metadata does not say which keys the user gave, so a
            user key of such a kind is dropped too (logged).  Keys with a
            ``None`` value are "not set" and dropped (Glance stores no
            null custom property).
        :returns: :class:`~.metadata.ImageRecord`; its id is
            ``sent['id']`` or a new UUID; property values are kept
            exactly as Nova encoded them (a non-string value is left for
            the preflight to refuse).
        :raises InvalidRequest: ``min_ram``/``min_disk`` are not
            integers, or ``block_device_mapping`` is not a JSON list.
        :raises UnsafeRecord: an entry Nova never writes
            (:func:`~.mappings.mapping_refusal`) or a property that makes
            deleting the image destroy something else (:mod:`.deletion`).
        """
        properties = self._properties(non_inheritable)
        if self.mapping_error is not None and isinstance(
                self.sent.get('block_device_mapping'), str):
            raise exception.InvalidRequest(field='block_device_mapping',
                                           reason=self.mapping_error)
        # Only Nova's own (JSON text) encoding is a mapping the record
        # holds; another value stays a property for the preflight.
        mappings = (list(self.entries or ()) if isinstance(
            self.sent.get('block_device_mapping'), str) else [])
        _check_safe(mappings, properties)
        min_disk, note = metadata_mod.cap_min_disk(
            _int(self.sent.get('min_disk'), 'min_disk'), mappings)
        if note:
            LOG.warning('Snapshot image %(name)s: %(note)s',
                        {'name': self.name, 'note': note})
        return metadata_mod.ImageRecord(
            image_id=self.sent.get('id') or uuidutils.generate_uuid(),
            name=self.name,
            visibility=self.sent.get('visibility') or (
                'shared' if self.member else 'private'),
            min_ram=_int(self.sent.get('min_ram'), 'min_ram'),
            min_disk=min_disk,
            properties=properties,
            member=self.member,
            mappings=mappings,
            notes=[note] if note else [])

    def _properties(self, non_inheritable: ty.Collection[str]
                    ) -> dict[str, ty.Any]:
        """The custom properties the record keeps (see :meth:`record`)."""
        properties: dict[str, ty.Any] = {}
        dropped = []
        for key, value in self.sent.items():
            if key in RECORD_ATTRIBUTES or value is None:
                continue
            kind = metadata_mod.never_inherited_kind(key, non_inheritable)
            if (kind is not None and kind != 'mapping' and
                    not _user_only(key)):
                dropped.append(key)
                continue
            properties[key] = value
        if dropped:
            LOG.info('Snapshot image %(name)s: not copying %(keys)s from '
                     "Nova's image metadata",
                     {'name': self.sent.get('name'),
                      'keys': ', '.join(sorted(dropped))})
        return properties


def _check_safe(mappings: list[ty.Any],
                properties: ty.Mapping[str, ty.Any]) -> None:
    """The record's own rules on this path too.

    Only the mappings Nova writes, nothing that deleting the image
    destroys.

    :raises UnsafeRecord: naming the entry's field or the property.
    """
    for i, entry in enumerate(mappings):
        refusal = (mappings_mod.mapping_refusal(entry, written=True)
                   if isinstance(entry, dict) else None)
        if refusal is not None and refusal[2]:
            raise exception.UnsafeRecord(
                field='block_device_mapping[%d].%s' % (i, refusal[0]),
                reason=refusal[1])
    armed = deletion.hazard(properties)
    if armed is not None:
        raise exception.UnsafeRecord(field='metadata.%s' % armed[0],
                                     reason=armed[1])


def record_from_glance_meta(sent: ty.Mapping[str, ty.Any],
                            member: str | None = None,
                            non_inheritable: ty.Collection[str] = ()
                            ) -> metadata_mod.ImageRecord:
    """:meth:`NovaImageMeta.record` of ``sent`` read once.

    :param sent: Nova's translated metadata without ``instance_owner``.
    :param member: Nova's ``instance_owner``, or None.
    :raises: see :meth:`NovaImageMeta.record`.
    """
    return NovaImageMeta.read(sent, member).record(non_inheritable)


#: Keys Nova itself never inherits (``compute_utils.
#: NON_INHERITABLE_IMAGE_PROPERTIES`` and the ``os_glance`` namespace):
#: in Nova's metadata they can only come from the user, so they are kept
#: for the preflight to judge, as the early check judges them.
NOVA_NEVER_INHERITS = frozenset([
    'cinder_encryption_key_id', 'cinder_encryption_key_deletion_policy',
    'img_signature', 'img_signature_hash_method', 'img_signature_key_type',
    'img_signature_certificate_uuid'])


def _user_only(key: str) -> bool:
    return key in NOVA_NEVER_INHERITS or key.startswith('os_glance')


def load_server(context: ty.Any, server_id: str,
                policies: ty.Sequence[str] = ()
                ) -> tuple[ty.Any, ty.Any] | None:
    """The ``Instance`` (with metadata and system metadata) and its BDMs.

    Read from the server's cell as ``compute.api.API.get`` reads it (both
    metadata columns: leaving one out makes Nova 34 use SQLAlchemy's
    deprecated ``noload()``), and, as Nova's API does when it loads a
    server (``nova.context.set_target_cell``), ``context`` itself is left
    targeted at that cell: everything later done for the request with it
    (instance actions, block device mappings, RPC) reaches the server's
    cell, not the database nova-api's ``[database]`` names (cell0 in
    devstack's layout).  Nova's API targets the same context at the same
    cell when it serves the request.

    :param context: Nova's ``RequestContext`` of the request; targeted
        at the server's cell on return when the server was found.
    :param server_id: the server's uuid.
    :param policies: Nova policy rules the caller must pass on the
        server's project (checked with ``fatal=False``); empty when Nova
        has already authorised the request.
    :returns: ``(Instance, BlockDeviceMappingList)``, or ``None`` when the
        server does not exist for the caller or a policy refuses (Nova
        then answers 404/403 itself).
    """
    from nova import context as nova_context
    from nova import exception as nova_exc
    from nova import objects

    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(context,
                                                               server_id)
        if mapping.cell_mapping is None:
            return None  # not in a cell yet (being scheduled): Nova's
        nova_context.set_target_cell(context, mapping.cell_mapping)
        instance = objects.Instance.get_by_uuid(
            context, server_id,
            expected_attrs=['metadata', 'system_metadata'])
        target = {'project_id': instance.project_id}
        if not all(context.can(rule, target=target, fatal=False)
                   for rule in policies):
            return None
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
            context, instance.uuid)
    except (nova_exc.InstanceMappingNotFound, nova_exc.InstanceNotFound):
        return None
    return instance, bdms


def _int(value: ty.Any, field: str) -> int:
    if value is None or value == '':
        return 0
    try:
        return int(value)
    except (TypeError, ValueError) as err:
        raise exception.InvalidRequest(
            field=field, reason='must be an integer, got %r' % (value,)
        ) from err


def _field(obj: ty.Any, name: str) -> ty.Any:
    # Never lazy-load: an unset field is "not given".
    if hasattr(obj, 'obj_attr_is_set') and not obj.obj_attr_is_set(name):
        return None
    return getattr(obj, name, None)


def bdm_dict(bdm: ty.Any, snapshot_id: str | None = None
             ) -> dict[str, ty.Any]:
    """One Nova ``BlockDeviceMapping`` object as a request mapping dict.

    A volume mapping gets a placeholder ``snapshot_id``: a fresh random
    UUID, the same shape and length as the id Cinder will give the real
    snapshot, so every length and quota check sees the real size.  The
    placeholder never reaches Glance: the early preflight creates nothing.

    :param bdm: a ``nova.objects.BlockDeviceMapping``.
    :param snapshot_id: the real snapshot id, when Nova took it already.
    :returns: a dict of :data:`BDM_FIELDS` (unset fields are ``None``).
    """
    data = {name: _field(bdm, name) for name in BDM_FIELDS}
    for flag in ('delete_on_termination', 'no_device'):
        data[flag] = bool(data[flag])
    if data['destination_type'] == 'volume' and not data['no_device']:
        data['snapshot_id'] = snapshot_id or uuidutils.generate_uuid()
    return data


def request_from_nova(context: ty.Any, instance: ty.Any, bdms: ty.Any,
                      name: str,
                      metadata: ty.Mapping[str, str] | None = None,
                      snapshot_ids: ty.Sequence[str | None] | None = None,
                      snapshot_sizes: ty.Mapping[str, int] | None = None
                      ) -> request_mod.SnapshotRequest:
    """The snapshot request Nova is about to carry out, before it starts.

    :param context: the ``nova.context.RequestContext`` of the request
        (project, user, roles of the caller).
    :param instance: the ``nova.objects.Instance``, loaded with
        ``system_metadata``.
    :param bdms: its ``nova.objects.BlockDeviceMappingList``.
    :param name: ``createImage`` ``name``.
    :param metadata: ``createImage`` ``metadata`` (string values).
    :param snapshot_ids: the ids of the volume snapshots Nova took, one
        per volume mapping in BDM order (what
        :func:`snapshot_ids_from_glance_meta` reads); ``None`` before
        Nova took them (placeholders, see :func:`bdm_dict`).
    :param snapshot_sizes: ``{snapshot id: GiB}`` as Cinder gives them
        (:meth:`~nova_snapshot_ext.cinder.NovaCinder.snapshot_sizes`): a
        mapping records at least its snapshot's size (:func:`volume_size_for`).
    :returns: a validated :class:`~.request.SnapshotRequest`.
    :raises InvalidRequest: the data does not form a valid request, or
        ``snapshot_ids`` does not match the volume mappings.
    :raises InvalidServerState: the vm_state forbids a snapshot.
    """
    sysmeta = _field(instance, 'system_metadata') or {}
    server = {
        'uuid': instance.uuid,
        'project_id': instance.project_id,
        'user_id': _field(instance, 'user_id'),
        'vm_state': _field(instance, 'vm_state') or 'active',
        'root_device_name': _field(instance, 'root_device_name'),
        'image_ref': _field(instance, 'image_ref') or '',
        'system_metadata': {k: v for k, v in dict(sysmeta).items()
                            if v is None or isinstance(v, str)},
    }
    return request_mod.SnapshotRequest.from_dict({
        'name': name,
        'server': server,
        'block_device_mappings': _bdm_dicts(bdms, snapshot_ids,
                                            snapshot_sizes or {}),
        'metadata': dict(metadata or {}),
        'requester': {'project_id': context.project_id,
                      'user_id': context.user_id,
                      'roles': list(context.roles or [])},
    })


def volume_size_for(recorded: int | None, snapshot_size: int | None
                    ) -> int | None:
    """The ``volume_size`` a mapping records for its volume snapshot.

    Nova's ``BlockDeviceMapping.volume_size`` follows an extended volume
    only once nova-compute has handled Cinder's ``volume-extended`` event
    (asynchronously; never when the event is lost), so a ``createImage``
    right after an extend reads the old size.  Cinder refuses a volume
    smaller than its snapshot ("Volume size '1'GB cannot be smaller than
    the snapshot size 2GB"), so such an image could boot nothing: the
    snapshot's own size wins when it is larger.

    :param recorded: Nova's ``volume_size`` (GiB) or None.
    :param snapshot_size: the snapshot's size in Cinder (GiB) or None
        (not read); anything but a whole number of at least 1 is ignored.
    :returns: GiB, or None when neither is known; ``recorded`` unchanged
        unless the snapshot's size is larger.
    """
    if isinstance(snapshot_size, bool) or \
            not isinstance(snapshot_size, int) or snapshot_size < 1:
        return recorded
    if recorded is None or int(recorded) < snapshot_size:
        return snapshot_size
    return recorded


def _bdm_dicts(bdms: ty.Any, snapshot_ids: ty.Sequence[str | None] | None,
               snapshot_sizes: ty.Mapping[str, int]
               ) -> list[dict[str, ty.Any]]:
    if snapshot_ids is None:
        return [bdm_dict(b) for b in bdms]
    volumes = [b for b in bdms if _field(b, 'destination_type') == 'volume'
               and not _field(b, 'no_device')]
    if len(volumes) != len(snapshot_ids) or not all(snapshot_ids):
        raise exception.InvalidRequest(
            field='block_device_mappings',
            reason='%d volume mappings but %d snapshot ids in the image '
            'metadata' % (len(volumes), len(snapshot_ids)))
    ids = iter(snapshot_ids)
    volume_ids = {id(b) for b in volumes}
    found = [bdm_dict(b, next(ids) if id(b) in volume_ids else None)
             for b in bdms]
    for mapping in found:
        size = snapshot_sizes.get(mapping['snapshot_id'] or '')
        grown = volume_size_for(mapping['volume_size'], size)
        if grown != mapping['volume_size']:
            LOG.warning('nova-snapshot-ext: Nova records volume %s as %s, '
                        'its snapshot %s is %s GiB; the image records %s '
                        'GiB', mapping['volume_id'],
                        '%s GiB (extended since Nova read it)'
                        % mapping['volume_size']
                        if mapping['volume_size'] is not None
                        else 'of no size', mapping['snapshot_id'], size,
                        grown)
            mapping['volume_size'] = grown
    return found


def to_nova_exception(err: exception.SnapshotExtException,
                      suffix: str = '') -> Exception:
    """The Nova exception that Nova's API answers like ``err``.

    Nova's ``createImage`` maps ``Invalid`` to 400, ``Forbidden`` and
    ``OverQuota`` to 403 and everything else to 500; the plugin's
    ``code`` (for :class:`~.exception.ActivationFailed`, the code of the
    last failed attempt) picks the class:

    ======================  ===========================================
    plugin code             Nova exception
    ======================  ===========================================
    400, 415                ``Invalid`` (preflight) or
                            ``ImageBadRequest`` (Glance refused)
    401, 403                ``Forbidden``
    404                     ``NotFound``
    413                     ``OverQuota``
    GlanceQuotaExceeded     ``OverQuota`` (403; the preflight's refusal
                            by Glance's unified limits)
    409                     ``InstanceInvalidState`` when the server
                            state is at fault, else ``NovaException``
    503, transport          ``GlanceConnectionFailed``
    other                   ``NovaException`` (500)
    ======================  ===========================================

    The message is the plugin's (it names the property, format or attempt
    at fault and never holds a token).

    :param err: a :class:`~nova_snapshot_ext.exception.SnapshotExtException`.
    :param suffix: appended to the message (e.g. what became of the
        request's volume snapshots).
    :returns: a ``nova.exception.NovaException`` instance (not raised).
    """
    from nova import exception as nova_exc

    message = err.format_message() + suffix
    code = getattr(err, 'code', 500)
    if isinstance(err, exception.GlanceQuotaExceeded):
        # Glance's quotas refuse the snapshot before anything exists: a
        # quota, as Nova answers its own (403 on createImage).
        return nova_exc.OverQuota(message=message)
    if isinstance(err, (exception.PreflightError, exception.InvalidRequest)):
        if code == 403:
            return nova_exc.Forbidden(message=message)
        return nova_exc.Invalid(message=message)
    if isinstance(err, exception.InvalidServerState):
        return nova_exc.InstanceInvalidState(message=message)
    if code in (400, 415):
        return nova_exc.ImageBadRequest(message=message)
    if code in (401, 403):
        return nova_exc.Forbidden(message=message)
    if code == 404:
        return nova_exc.NotFound(message=message)
    if code == 413:
        return nova_exc.OverQuota(message=message)
    if code == 503:
        return nova_exc.GlanceConnectionFailed(server='image service',
                                               reason=message)
    return nova_exc.NovaException(message=message)
