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

"""Build the Nova-compatible image record of a volume-backed snapshot.

The rules follow Nova's ``compute_utils.initialize_instance_snapshot_
metadata`` and ``compute.api.API.snapshot_volume_backed`` (Nova 34), with
the encodings of ``nova.image.glance._translate_to_glance``, so an image
made here is read by Nova exactly like one Nova made:

* properties are inherited from the server's recorded image metadata,
  minus keys that are never inherited (:data:`NEVER_INHERITED`, the
  ``os_glance`` namespace, ``[snapshot_ext] non_inheritable_image_
  properties``);
* user metadata goes on top (Nova: ``properties.update(extra_properties)``);
* ``block_device_mapping``, ``bdm_v2`` and ``root_device_name`` always come
  from the server, never from inherited or user input;
* ``block_device_mapping`` is a JSON list, non-volume entries first, volume
  entries rewritten as ``source_type=snapshot`` with the new snapshot id
  (Nova's ``block_device.snapshot_from_bdm`` + ``get_image_mapping``);
* every property value is a string (``True`` -> ``'True'``), ``min_ram`` and
  ``min_disk`` are integers.

Where this module is stricter than Nova it says so: Nova copies *every*
system metadata key (``owner_user_name``, ``boot_roles``, ``password_0``...);
only ``image_``-prefixed keys are image metadata, so only those are read.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import re
import typing as ty

from oslo_log import log as logging
from oslo_serialization import jsonutils

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import database_rules
from nova_snapshot_ext.snapshot import deletion
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import tags as tags_mod

LOG = logging.getLogger(__name__)

#: Nova's ``SM_IMAGE_PROP_PREFIX``.
SYSMETA_IMAGE_PREFIX = 'image_'

#: Nova's ``SM_SKIP_KEYS``: legacy mapping keys never read from sysmeta.
SYSMETA_SKIP_KEYS = frozenset([
    'mappings', 'block_device_mapping', 'img_mappings',
    'img_block_device_mapping'])

#: Keys that are Glance base attributes, not properties (Nova's
#: ``SM_INHERITABLE_KEYS``).  ``min_ram``/``min_disk`` are inherited;
#: ``disk_format``/``container_format`` are chosen per activation attempt.
BASE_ATTRIBUTE_KEYS = frozenset(['min_ram', 'min_disk', 'disk_format',
                                 'container_format'])

#: Kinds of properties that are never copied from another image onto a
#: snapshot, whatever the configuration says.  Each kind names *why*; the
#: operator docs (``doc/source/image-record.rst``) list them with their
#: sources.  The vocabulary is public (``nova-snapshot-ext audit`` reports
#: it):
#:
#: ``secret``
#:     a reference to (or the value of) a secret of the server or of
#:     another image: a copied key id lets deleting one image destroy the
#:     shared secret (Nova's ``NON_INHERITABLE_IMAGE_PROPERTIES``,
#:     LP#1852106); ``vtpm_secret_uuid`` names the server's vTPM secret,
#:     ``password_N`` holds its encrypted admin password.
#: ``ownership``
#:     who owns or may see an image (``owner``, ``visibility``...;
#:     LP#1322195, LP#1255316); the snapshot's own come from the request.
#: ``glance-state``
#:     Glance's own attributes of another image (id, status, dates,
#:     locations, tags...) and the reserved ``os_glance`` namespace
#:     (LP#1912001); Cinder copies many into ``volume_image_metadata``
#:     (LP#1439819).
#: ``foreign-data``
#:     facts about bytes the snapshot does not hold, or their upload (size,
#:     checksum, ``os_hash_*``, ``owner_specified.<any tool>.*``, and any
#:     name made of :data:`FOREIGN_DATA_WORDS`: ``*_checksum``, ``*.md5``,
#:     ``*sha256*``, ``*.object``...).
#: ``provenance``
#:     where another image came from or who signed it (``img_signature*``,
#:     Cinder's ``image_id``/``image_name`` of the volume's source image,
#:     any name made of :data:`PROVENANCE_WORDS`).
#: ``borrowed-identity``
#:     what an image says it *is*: ``image_type``, ``backup_type``,
#:     ``instance_uuid``, ``user_id`` (Nova LP#1031079: a copied backup
#:     identity puts the snapshot in another server's backup rotation),
#:     ``snapshot_ext_fingerprint`` (the plugin's id of another snapshot).
#:     The snapshot writes its own (:func:`self_description`).
#: ``status-marker``
#:     the state another service keeps about another object: Cinder's
#:     ``signature_verified`` (LP#1823445), Nova's ``network_allocated``,
#:     ``clean_attempts``, ``old_vm_state``.
#: ``server-record``
#:     Nova system metadata that is not image metadata (``owner_user_name``,
#:     ``boot_roles``, legacy ``instance_type_*`` flavors): Nova copies it,
#:     the plugin never does.
#: ``mapping``
#:     the keys always rebuilt from this server (``block_device_mapping``,
#:     ``bdm_v2``, ``root_device_name``, ``mappings``).
#: ``operator-list``
#:     listed in ``[snapshot_ext] non_inheritable_image_properties``.
NEVER_INHERITED_KINDS: dict[str, frozenset[str]] = {
    'secret': frozenset([
        'cinder_encryption_key_id', 'cinder_encryption_key_deletion_policy',
        'vtpm_secret_uuid', 'vtpm_secret_value']),
    'ownership': frozenset([
        'owner', 'instance_owner', 'owner_id', 'visibility', 'is_public',
        'protected', 'os_hidden', 'owner_user_name', 'owner_project_name']),
    'glance-state': frozenset([
        'id', 'name', 'status', 'created_at', 'updated_at', 'deleted',
        'deleted_at', 'location', 'locations', 'direct_url', 'self', 'file',
        'schema', 'stores', 'tags', 'container_format', 'disk_format']),
    'foreign-data': frozenset([
        'size', 'virtual_size', 'checksum', 'os_hash_algo',
        'os_hash_value']),
    'provenance': frozenset([
        'img_signature', 'img_signature_hash_method',
        'img_signature_key_type', 'img_signature_certificate_uuid',
        'image_id', 'image_name']),
    'borrowed-identity': frozenset([
        'image_type', 'backup_type', 'instance_uuid', 'user_id',
        'image_location', 'image_state', 'snapshot_ext_fingerprint']),
    'status-marker': frozenset([
        'signature_verified', 'network_allocated', 'clean_attempts',
        'old_vm_state']),
    'server-record': frozenset(['boot_roles']),
    'mapping': frozenset([
        'block_device_mapping', 'bdm_v2', 'root_device_name', 'mappings']),
}

#: Name prefixes of a kind (checked after the exact names).
NEVER_INHERITED_PREFIXES: tuple[tuple[str, str], ...] = (
    ('os_glance', 'glance-state'),
    ('password_', 'secret'),
    ('instance_type_', 'server-record'),
    ('new_instance_type_', 'server-record'),
    ('old_instance_type_', 'server-record'),
    # openstacksdk's ``create_image`` (and shade's before it) records the
    # md5/sha256 of the file it uploaded and its object name
    # (``owner_specified.openstack.md5``, ``owner_specified.shade.sha256``,
    # ``.object``): facts about another image's bytes, under any tool's
    # name.
    ('owner_specified.', 'foreign-data'),
    # Glance's image signature verification (``img_signature*``) and
    # anything named after it: who signed another image.
    ('img_signature', 'provenance'),
)

#: Words that make a property a fact about another image's bytes, their
#: upload or their origin, wherever they appear in its name (a *word*:
#: delimited by ``.``, ``_``, ``-``, ``:``, a camelCase boundary or a
#: digit, with an optional ``sum``/``s``/``name``/``id``/``value`` tail):
#: checksums and digests under any algorithm's name (``*_checksum``,
#: ``*.md5``, ``sha256sum``, ``x-sha512``, ``crc32c``, ``etag``...), the
#: object a tool uploaded the file as (``*.object``, ``swift_object_name``),
#: the upload itself (``uploaded_by``, ``upload_date``), where the file
#: came from (``source_url``, ``image_source``, ``origin``,
#: ``imported_from``, ``import_url``, ``web_download_url``,
#: ``copied_from``, ``derived_from``), and its signature or fingerprint.
#: Nova's own image properties (``nova/objects/image_meta.py``
#: ``ImageMetaProps``: ``hw_*``, ``img_*``, ``os_*``, ``traits_required``)
#: use none of these words but in ``img_signature*``, which is provenance
#: too; the names of required traits (``trait:*``) are not judged.
FOREIGN_DATA_WORDS = (
    'md5', 'sha', 'sha1', 'sha2', 'sha3', 'sha224', 'sha256', 'sha384',
    'sha512', 'crc', 'crc32', 'crc32c', 'crc64', 'blake2', 'blake2b',
    'blake2s', 'blake3', 'xxh64', 'xxh128', 'xxhash', 'adler32',
    'checksum', 'hash', 'digest', 'etag', 'object', 'upload', 'uploaded',
    'uploader')
PROVENANCE_WORDS = ('signature', 'signed', 'fingerprint', 'source',
                    'origin', 'import', 'imported', 'download',
                    'downloaded', 'copied', 'derived', 'provenance')

#: ``word`` or ``word`` + tail, delimited (see :data:`FOREIGN_DATA_WORDS`).
_WORD_TAIL = r'(?:sum|sums|s|es|name|names|id|ids|value|values|date|at|by)?'
_FOREIGN_DATA_RE = re.compile(
    r'(?:^|(?<=[^a-z]))(?:%s)%s(?=$|[^a-z])'
    % ('|'.join(sorted(FOREIGN_DATA_WORDS, key=len, reverse=True)),
       _WORD_TAIL))
_PROVENANCE_RE = re.compile(
    r'(?:^|(?<=[^a-z]))(?:%s)%s(?=$|[^a-z])'
    % ('|'.join(sorted(PROVENANCE_WORDS, key=len, reverse=True)),
       _WORD_TAIL))
_CAMEL_RE = re.compile(r'(?<=[a-z0-9])(?=[A-Z])')


def _words_kind(key: str) -> str | None:
    """``'foreign-data'``/``'provenance'`` by the words of ``key``."""
    text = _CAMEL_RE.sub('_', key).lower()
    if _FOREIGN_DATA_RE.search(text):
        return 'foreign-data'
    if _PROVENANCE_RE.search(text):
        return 'provenance'
    return None


#: Name suffixes of a kind: references to a key-manager secret.
NEVER_INHERITED_SUFFIXES: tuple[tuple[str, str], ...] = (
    ('_secret_uuid', 'secret'),
    ('_encryption_key_id', 'secret'),
)

#: Every exact never-inherited name (any kind).
NEVER_INHERITED = frozenset().union(*NEVER_INHERITED_KINDS.values())

#: Exact name -> its kind (the first kind listing it): one look-up.
_KIND_OF_NAME: dict[str, str] = {}
for _kind, _names in NEVER_INHERITED_KINDS.items():
    for _name in _names:
        _KIND_OF_NAME.setdefault(_name, _kind)
#: Every prefix and suffix, for one C-level ``startswith``/``endswith``.
_PREFIXES = tuple(p for p, _ in NEVER_INHERITED_PREFIXES)
_SUFFIXES = tuple(s for s, _ in NEVER_INHERITED_SUFFIXES)


def never_inherited_kind(key: str,
                         operator_keys: ty.Collection[str] = ()
                         ) -> str | None:
    """The kind of a property that is never copied from another image.

    :param key: a property name, as Glance stores it (no ``image_``
        system-metadata prefix).
    :param operator_keys: ``[snapshot_ext] non_inheritable_image_
        properties`` (reported as ``'operator-list'``).
    :returns: one of ``'secret'``, ``'ownership'``, ``'glance-state'``,
        ``'foreign-data'``, ``'provenance'``, ``'borrowed-identity'``,
        ``'status-marker'``, ``'server-record'``, ``'mapping'``,
        ``'operator-list'`` (see :data:`NEVER_INHERITED_KINDS`), or
        ``None`` when the property may be inherited.
    """
    kind = _KIND_OF_NAME.get(key)
    if kind is not None:
        return kind
    if key.startswith(_PREFIXES):
        for prefix, kind in NEVER_INHERITED_PREFIXES:
            if key.startswith(prefix):
                return kind
    if database_rules.in_glance_namespace(key):
        # Glance's own namespace as a MySQL Glance compares names.
        return 'glance-state'
    if key.endswith(_SUFFIXES):
        for suffix, kind in NEVER_INHERITED_SUFFIXES:
            if key.endswith(suffix):
                return kind
    # 'trait:<name>' is Nova's required-trait namespace (ImageMetaProps.
    # _set_attr_from_trait_names): the name is a host capability
    # (os-traits HW_CPU_X86_SHA, HW_CPU_AARCH64_CRC32...), never a fact
    # about another image's bytes, whatever its words.
    kind = None if key.startswith('trait:') else _words_kind(key)
    if kind is not None:
        return kind
    if key in operator_keys:
        return 'operator-list'
    return None


def root_mapping(mappings: ty.Iterable[ty.Mapping[str, ty.Any]]
                 ) -> ty.Mapping[str, ty.Any] | None:
    """The root entry (``boot_index`` 0, not ``no_device``) or ``None``.

    :param mappings: image mapping entries (decoded
        ``block_device_mapping``) or request mapping dicts.
    """
    for entry in mappings:
        if entry.get('no_device'):
            continue
        value = entry.get('boot_index')
        if value is None:
            continue
        try:
            index = int(value)
        except (TypeError, ValueError):
            continue
        if index == 0:
            return entry
    return None


def max_min_disk(mappings: ty.Iterable[ty.Mapping[str, ty.Any]]
                 ) -> int | None:
    """The largest ``min_disk`` an image with these mappings may carry.

    Nova refuses to boot from an image whose ``min_disk`` exceeds the size
    of the volume it creates for the root disk
    (``VolumeSmallerThanMinDisk``); that volume is the root mapping's
    (``boot_index`` 0) ``volume_size``.

    :param mappings: image mapping entries (decoded
        ``block_device_mapping``), e.g. :attr:`ImageRecord.mappings`.
    :returns: the root mapping's ``volume_size`` in GiB, or ``None`` when
        there is no root volume mapping or its size is unknown (no cap).
    """
    root = root_mapping(mappings)
    if root is None or root.get('destination_type') != 'volume':
        return None
    value = root.get('volume_size')
    if value is None:
        return None
    try:
        size = int(value)
    except (TypeError, ValueError):
        return None
    return size if size >= 0 else None


#: Keys the plugin writes itself; user metadata cannot override them
#: (Nova pops them after merging ``extra_properties``).
MAPPING_KEYS = ('block_device_mapping', 'bdm_v2', 'root_device_name')

#: The fields of one image mapping entry (Nova's ``bdm_new_fields`` minus
#: ``connection_info``).
MAPPING_FIELDS = (
    'source_type', 'destination_type', 'guest_format', 'device_type',
    'disk_bus', 'boot_index', 'device_name', 'delete_on_termination',
    'snapshot_id', 'volume_id', 'volume_size', 'image_id', 'no_device',
    'tag', 'volume_type', 'encrypted', 'encryption_secret_uuid',
    'encryption_format', 'encryption_options')

#: Fields a volume entry copies from the server's mapping (Nova's
#: ``snapshot_from_bdm``); ``volume_type`` is copied too
#: (:func:`mapping_entries`); every other field is ``None``.
SNAPSHOT_COPIED_FIELDS = ('disk_bus', 'device_type', 'boot_index',
                          'delete_on_termination', 'volume_size',
                          'device_name')

# What mapping_entries reads and writes, computed once (a 50-mapping
# request builds 50 entries per snapshot).
_VOLUME_COPIED = SNAPSHOT_COPIED_FIELDS + ('snapshot_id', 'volume_type')
_get_volume_copied = operator.attrgetter(*_VOLUME_COPIED)
_get_mapping_fields = operator.attrgetter(*MAPPING_FIELDS)
_VOLUME_ENTRY: dict[str, ty.Any] = dict.fromkeys(MAPPING_FIELDS)
_VOLUME_ENTRY.update(source_type='snapshot', destination_type='volume')


@dataclasses.dataclass
class ImageRecord:
    """The Glance image the plugin will create, before a format is chosen.

    :ivar image_id: the id the plugin chose (UUID string).
    :ivar name: image name.
    :ivar visibility: ``private``, or ``shared`` when ``member`` is set.
    :ivar min_ram: MiB, int (Glance base attribute).
    :ivar min_disk: GiB, int (Glance base attribute).
    :ivar properties: custom properties, every value a ``str``.
    :ivar member: project id to add as an image member, or ``None``.
    :ivar mappings: the decoded ``block_device_mapping`` list, for callers
        and tests (the same data as ``properties['block_device_mapping']``).
    :ivar optional: property names the record can do without (the
        snapshot's self-description and the driver's stamped keys, in the
        order to drop them): the preflight leaves them out, with a
        warning, rather than refuse a record that only they push over
        ``image_property_quota``.
    :ivar notes: what the builder changed and why (e.g. ``min_disk``
        lowered to the root volume), one sentence each.
    :ivar id_bound: properties whose value depends on the created image's
        id (a fallback attempt's id differs from ``image_id``): name ->
        ``f(image_id) -> str``; :meth:`properties_for` applies them.
    """

    image_id: str
    name: str
    visibility: str
    min_ram: int
    min_disk: int
    properties: dict[str, str]
    member: str | None = None
    mappings: list[dict[str, ty.Any]] = dataclasses.field(
        default_factory=list)
    optional: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    id_bound: dict[str, ty.Callable[[str], str]] = dataclasses.field(
        default_factory=dict)

    @property
    def tags(self) -> list[str]:
        """Glance tags, one per volume snapshot the mappings name, sorted.

        :func:`~.tags.tags_of` of :attr:`mappings`, whichever path built
        the record; the rotation finds the images naming a volume
        snapshot by them.
        """
        return tags_mod.tags_of(
            str(m['snapshot_id']) for m in self.mappings
            if isinstance(m, dict) and m.get('snapshot_id'))

    def properties_for(self, image_id: str) -> dict[str, str]:
        """The properties of the image created with id ``image_id``."""
        props = dict(self.properties)
        for key, value_of in self.id_bound.items():
            if key in props:
                props[key] = value_of(image_id)
        return props

    def drop_optional(self, count: int) -> list[str]:
        """Leave out up to ``count`` optional properties.

        :returns: the names left out, in order.
        """
        dropped: list[str] = []
        for key in list(self.optional):
            if len(dropped) >= count:
                break
            if key in self.properties:
                del self.properties[key]
                dropped.append(key)
            self.optional.remove(key)
        return dropped

    def create_kwargs(self, disk_format: str, container_format: str,
                      image_id: str | None = None) -> dict[str, ty.Any]:
        """glanceclient ``images.create`` keyword arguments.

        :param disk_format: Glance disk_format of this attempt.
        :param container_format: Glance container_format of this attempt.
        :param image_id: override the id (a fallback attempt uses a fresh
            one, since Glance never lets an id be reused).
        :returns: base attributes (``tags`` when the record has any) plus
            the flattened properties.
        """
        kwargs: dict[str, ty.Any] = self.properties_for(
            image_id or self.image_id)
        kwargs.update(id=image_id or self.image_id, name=self.name,
                      visibility=self.visibility, min_ram=self.min_ram,
                      min_disk=self.min_disk, disk_format=disk_format,
                      container_format=container_format)
        if self.tags:
            kwargs['tags'] = list(self.tags)
        return kwargs


def is_non_image_system_metadata(key: str) -> bool:
    """True for Nova system metadata keys that are not image metadata.

    (``owner_user_name``, ``boot_roles``, ``password_N``, legacy flavors,
    Nova's and Ironic's counters, the vTPM secret id...: Nova copies them
    onto a snapshot; the plugin never does.)
    """
    return never_inherited_kind(key) in (
        'server-record', 'secret', 'status-marker', 'ownership')


def is_never_inherited(key: str,
                       operator_keys: ty.Collection[str] = ()) -> bool:
    """True if property ``key`` must never be copied onto a snapshot.

    :param key: property name.
    :param operator_keys: ``[snapshot_ext] non_inheritable_image_
        properties``.
    """
    return never_inherited_kind(key, operator_keys) is not None


def _to_int(value: ty.Any, field: str) -> int:
    if value is None or value == '':
        return 0
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise exception.InvalidRequest(
            field=field, reason='must be an integer, got %r' % (value,))
    if not 0 <= number <= 2 ** 31 - 1:
        raise exception.InvalidRequest(
            field=field, reason='must be between 0 and 2147483647 (a '
            'Glance integer attribute), got %d' % number)
    return number


def inherited_metadata(server: request_mod.Server
                       ) -> tuple[dict[str, ty.Any], dict[str, str]]:
    """Read the server's recorded image metadata.

    :returns: ``(base, properties)``: ``base`` holds ``min_ram`` /
        ``min_disk`` (and any recorded formats) as found; ``properties``
        the remaining keys.  ``image_metadata`` is read first, then
        ``system_metadata`` (``image_`` keys only, prefix stripped) wins.
    """
    base: dict[str, ty.Any] = {}
    properties: dict[str, str] = {}
    sources = [(k, v, 'server.image_metadata.%s' % k)
               for k, v in server.image_metadata.items()]
    sources += [(k[len(SYSMETA_IMAGE_PREFIX):], v,
                 'server.system_metadata.%s' % k)
                for k, v in server.system_metadata.items()
                if k.startswith(SYSMETA_IMAGE_PREFIX)]
    for key, value, field in sources:
        if value is None or key in SYSMETA_SKIP_KEYS:
            continue
        if key in BASE_ATTRIBUTE_KEYS:
            base[key] = (value, field)
        else:
            properties[key] = value
    return base, properties


def mapping_entries(bdms: ty.Sequence[request_mod.BlockDeviceMapping]
                    ) -> list[dict[str, ty.Any]]:
    """Image mapping entries in Nova's order and shape.

    Non-volume mappings (swap, ephemeral, local image) come first in their
    own order, then one ``source_type=snapshot`` entry per volume mapping.
    ``no_device`` mappings are skipped.  Each entry holds every key of
    :data:`MAPPING_FIELDS`; ``device_name`` gets the ``/dev/`` prefix Nova
    adds; database ids and ``connection_info`` never appear.

    :returns: list of dicts, JSON-serialisable.
    """
    local: list[dict[str, ty.Any]] = []
    volumes: list[dict[str, ty.Any]] = []
    for bdm in bdms:
        if bdm.no_device:
            continue
        if bdm.is_volume:
            # volume_type: what a later boot needs to recreate the volume
            # with the same (e.g. encrypted) type (Nova LP#1853495; a Nova
            # without that fix reads it from here).  The encryption fields
            # stay None: they describe the source volume's secret.
            entry: dict[str, ty.Any] = dict(_VOLUME_ENTRY)
            entry.update(zip(_VOLUME_COPIED, _get_volume_copied(bdm)))
            # One spelling of the Cinder id: what a boot hands to Cinder,
            # and what the fingerprint (hence the image id) is made of.
            entry['snapshot_id'] = request_mod.cinder_id(entry['snapshot_id'])
            volumes.append(entry)
        else:
            entry = dict(zip(MAPPING_FIELDS, _get_mapping_fields(bdm)))
            if entry['encrypted'] is None:
                entry['encrypted'] = False
            # The key-manager secret of *this* server's ephemeral disk: a
            # server booted from the image must get its own, and deleting
            # that server must not delete this one's (kind ``secret``).
            # Whether it is encrypted, and how, is kept.
            entry['encryption_secret_uuid'] = None
            local.append(entry)
        if entry['delete_on_termination'] is not True:
            entry['delete_on_termination'] = bool(
                entry['delete_on_termination'])
        name = entry['device_name']
        if name and not name.startswith('/dev/'):
            entry['device_name'] = '/dev/' + name
    return local + volumes


#: ``jsonutils.dumps`` (what Nova writes) with one encoder for every
#: snapshot: same text (same separators, ASCII, ``to_primitive`` for
#: anything JSON has no type for), without a new encoder per call or the
#: circular-reference bookkeeping the flat entries do not need.
_MAPPINGS_JSON = json.JSONEncoder(check_circular=False,
                                  default=jsonutils.to_primitive).encode


def _encode(value: ty.Any) -> str:
    # nova.image.glance._convert_to_v2: str values pass, others str().
    return value if isinstance(value, str) else str(value)


#: Keys the hypervisor driver may stamp (``SnapshotDriver.
#: image_properties``).
STAMPED_KEYS = ('hypervisor_type', 'vm_mode')


#: Properties the plugin writes for its own bookkeeping (the engine's
#: snapshot fingerprint).  Like the self-description they give way to a
#: full property quota rather than refuse a snapshot Nova would take; they
#: go last.
BOOKKEEPING_KEYS = ('snapshot_ext_fingerprint',)

#: The order in which the self-description gives way to a full property
#: quota: ``image_type`` (Horizon, backup rotation) goes last.
SELF_DESCRIPTION_DROP_ORDER = ('user_id', 'instance_uuid', 'backup_type',
                               'image_type')


def self_description(snapshot: request_mod.SnapshotRequest
                     ) -> dict[str, str]:
    """What a volume-backed snapshot says about itself.

    As Nova writes on image-backed snapshots (``compute.api.API.
    _create_image``): ``image_type`` (``snapshot``, or ``backup`` with
    ``backup_type`` for a backup request), ``instance_uuid`` (this
    server) and ``user_id`` (the requester).  Nova's own volume-backed
    path writes none of these (it only passes on what the server
    inherited); the plugin writes them on both of its paths so that backup
    rotation of another server never counts this image, the rotation of
    this server does count its backups, and Horizon lists it as a
    snapshot.

    :returns: property name -> str value.
    """
    own = {'image_type': 'backup' if snapshot.backup_type else 'snapshot',
           'instance_uuid': snapshot.server.uuid}
    if snapshot.backup_type:
        own['backup_type'] = snapshot.backup_type
    user_id = snapshot.requester.user_id or snapshot.server.user_id
    if user_id:
        own['user_id'] = user_id
    return own


def cap_min_disk(min_disk: int, mappings: ty.Sequence[ty.Mapping[str, ty.Any]]
                 ) -> tuple[int, str | None]:
    """``min_disk`` lowered to what the root volume can boot.

    :returns: ``(min_disk, note)``; ``note`` is ``None`` when unchanged.
    """
    limit = max_min_disk(mappings)
    if limit is None or min_disk <= limit:
        return min_disk, None
    return limit, ('min_disk %d GiB (inherited) lowered to %d GiB, the '
                   'root volume size: Nova refuses to boot an image whose '
                   'min_disk exceeds its root volume' % (min_disk, limit))


def _check_instance_owner(snapshot: request_mod.SnapshotRequest,
                          value: str) -> None:
    # Nova reads user metadata instance_owner as "share the image with
    # this project" and adds it as a member; Glance refuses members on a
    # private image (403) after Nova snapshotted the volumes.  The
    # server's or the caller's own project needs no sharing: not a
    # property, dropped (as the hook drops it).
    if value in (snapshot.server.project_id, snapshot.requester.project_id):
        return
    raise exception.SharingNotAllowed(project=value)


def build_image_record(snapshot: request_mod.SnapshotRequest,
                       non_inheritable: ty.Collection[str] = (),
                       driver_properties: ty.Mapping[str, str] | None = None,
                       image_id: str | None = None) -> ImageRecord:
    """Build the image record for ``snapshot``.

    The one builder of the plugin: the standalone path, the early refusal
    inside nova-api and Nova's activation hook all judge and create the
    record it returns.  Layers, later ones winning:

    1. the server's image metadata, minus every never-inherited kind
       (:func:`never_inherited_kind`);
    2. the snapshot's self-description (:func:`self_description`);
    3. the driver's stamped keys (:data:`STAMPED_KEYS`), unless the
       operator lists them in ``non_inheritable_image_properties``;
    4. user metadata (Nova: ``properties.update(extra_properties)``),
       except the mapping keys;
    5. ``block_device_mapping`` / ``bdm_v2`` / ``root_device_name`` from
       the server.

    ``min_disk`` never exceeds the root volume (:func:`cap_min_disk`).

    :param snapshot: a validated :class:`SnapshotRequest`.
    :param non_inheritable: the operator's extra never-inherited keys
        (``[snapshot_ext] non_inheritable_image_properties``).
    :param driver_properties: properties the hypervisor driver stamps
        (``hypervisor_type``, ``vm_mode``).
    :param image_id: the image id to use; default ``snapshot.image_id``.
    :returns: :class:`ImageRecord`.
    :raises InvalidRequest: ``min_ram``/``min_disk`` are not integers.
    :raises SharingNotAllowed: user metadata ``instance_owner`` names a
        project other than the server's or the caller's.
    """
    server = snapshot.server
    base, inherited = inherited_metadata(server)
    properties = _inherited_layer(server.uuid, inherited, non_inheritable)
    own = self_description(snapshot)
    properties.update(own)
    stamped = []
    for key, value in (driver_properties or {}).items():
        if key in non_inheritable:
            continue
        properties[key] = _encode(value)
        stamped.append(key)
    _user_layer(snapshot, properties)
    optional = [k for k in stamped + [k for k in SELF_DESCRIPTION_DROP_ORDER
                                      if k in own]
                if k not in snapshot.metadata]
    mappings = mapping_entries(snapshot.block_device_mappings)
    if server.root_device_name:
        properties['root_device_name'] = server.root_device_name
    if mappings:
        properties['block_device_mapping'] = _MAPPINGS_JSON(mappings)
        properties['bdm_v2'] = 'True'
    armed = deletion.hazard(properties)
    if armed is not None:
        # Never a plugin-made image that deleting destroys something else
        # (the request refuses it in user metadata; this is the record's
        # own guarantee, whatever layer brought it).
        raise exception.UnsafeRecord(
            field='metadata.%s' % armed[0], reason=armed[1])
    min_disk, note = cap_min_disk(_to_int(*base.get('min_disk', (None, ''))),
                                  mappings)
    if note:
        LOG.warning('Snapshot of server %(server)s: %(note)s',
                    {'server': server.uuid, 'note': note})
    # Nova: an admin snapshotting another project's server shares the
    # image with the server's owner (instance_owner -> image member).
    shared = snapshot.requester.project_id != server.project_id
    return ImageRecord(
        image_id=image_id or snapshot.image_id or '',
        name=snapshot.name,
        visibility='shared' if shared else 'private',
        min_ram=_to_int(*base.get('min_ram', (None, ''))),
        min_disk=min_disk,
        properties=properties,
        member=server.project_id if shared else None,
        mappings=mappings,
        optional=optional,
        notes=[note] if note else [])


def _inherited_layer(server_id: str, inherited: ty.Mapping[str, ty.Any],
                     non_inheritable: ty.Collection[str]
                     ) -> dict[str, str]:
    """The server's image metadata the record inherits (layer 1).

    Every never-inherited kind dropped (:func:`never_inherited_kind`,
    logged at DEBUG), and the empty ``kernel_id``/``ramdisk_id`` Nova's
    ``_convert_to_v2`` omits.

    :returns: ``{key: encoded value}``.
    """
    properties: dict[str, str] = {}
    dropped: dict[str, list[str]] = {}
    for key, value in inherited.items():
        kind = never_inherited_kind(key, non_inheritable)
        if kind is not None:
            dropped.setdefault(kind, []).append(key)
            continue
        if key in ('kernel_id', 'ramdisk_id') and (
                str(value).strip().lower() in ('', 'none')):
            continue
        properties[key] = _encode(value)
    if dropped and LOG.isEnabledFor(logging.DEBUG):
        LOG.debug('Snapshot of server %(server)s does not inherit %(keys)s',
                  {'server': server_id,
                   'keys': '; '.join('%s: %s' % (k, ', '.join(sorted(v)))
                                     for k, v in sorted(dropped.items()))})
    return properties


def _user_layer(snapshot: request_mod.SnapshotRequest,
                properties: dict[str, str]) -> None:
    """User metadata over ``properties`` (layer 4).

    User metadata wins (Nova), except the mapping keys Nova pops after
    the merge; whatever else is wrong with it (reserved names...) is a
    preflight refusal, not a silent drop.

    :raises SharingNotAllowed: ``instance_owner`` names a project other
        than the server's or the caller's.
    """
    for key, value in snapshot.metadata.items():
        if key == 'instance_owner':
            _check_instance_owner(snapshot, value)
        elif key not in MAPPING_KEYS:
            properties[key] = _encode(value)
