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

"""The snapshot request: what a host hands the plugin.

A request is built from a JSON document (the CLI's ``REQUEST.json``) with
:meth:`SnapshotRequest.from_dict`, or directly from the dataclasses by a
Python host.  Field names are Nova's (``nova.objects.Instance`` and
``nova.objects.BlockDeviceMapping``).  The JSON form::

    {
      "name": "nightly-db01",                 # image name, 1..255 chars
      "image_id": "9f0c...",                  # optional: reuse on retry
      "backup_type": "daily",                 # optional: a backup
      "metadata": {"backup": "nightly"},      # user metadata (strings)
      "server": {
        "uuid": "6e2b...",                    # instance uuid
        "project_id": "a1b2...",              # the server's project
        "user_id": "c3d4...",
        "vm_state": "active",                 # active|stopped|paused|
                                              # suspended
        "root_device_name": "/dev/vda",
        "image_ref": "",                      # '' for boot from volume
        "system_metadata": {"image_min_ram": "512",
                            "image_os_distro": "ubuntu"},
        "image_metadata": {"hw_disk_bus": "virtio"}
      },
      "block_device_mappings": [
        {"source_type": "volume", "destination_type": "volume",
         "boot_index": 0, "device_name": "/dev/vda",
         "volume_id": "V1", "snapshot_id": "S1", "volume_size": 10,
         "delete_on_termination": true, "disk_bus": "virtio",
         "device_type": "disk"},
        {"source_type": "blank", "destination_type": "local",
         "boot_index": -1, "guest_format": "swap", "volume_size": 1,
         "device_name": "/dev/vdb"}
      ],
      "requester": {"project_id": "a1b2...", "user_id": "c3d4...",
                    "roles": ["member", "reader"]}
    }

``system_metadata`` is Nova's instance system metadata (image properties
recorded at boot under the ``image_`` prefix); ``image_metadata`` is the
same information already unprefixed (a host that has
``instance.image_meta``).  Volume mappings (``destination_type ==
"volume"``) must carry the ``snapshot_id`` of the Cinder snapshot the host
took.  Database-only keys of Nova's records (``id``, ``instance_uuid``,
``connection_info``, ...) are accepted and ignored; any other unknown key
is an error.

What each field accepts is declared once, in
:mod:`~nova_snapshot_ext.snapshot.request_rules` (the request's JSON
Schema is generated from the same table); the rules that span fields are
below.

Every validation failure raises
:class:`~nova_snapshot_ext.exception.InvalidRequest` whose ``field``
kwarg names the offending field as a path, e.g.
``block_device_mappings[1].snapshot_id``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import operator
import os
import re
import typing as ty
import uuid as uuid_mod

from oslo_utils import strutils

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import deletion
from nova_snapshot_ext.snapshot import mappings
from nova_snapshot_ext.snapshot import request_rules as rules

#: The shipped sample request (the demo's default).
SAMPLE_REQUEST = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'data', 'sample-request.json')

#: vm_states from which Nova's ``snapshot_volume_backed`` may run
#: (``nova/compute/api.py`` ``@check_instance_state``).
SNAPSHOT_VM_STATES = rules.SNAPSHOT_VM_STATES

#: Keys of Nova's BDM records that never reach an image mapping
#: (``nova/block_device.py`` db-only/inherited fields + connection_info).
BDM_IGNORED_KEYS = frozenset(rules.BDM_IGNORED_KEYS)

SOURCE_TYPES = rules.SOURCE_TYPES
DESTINATION_TYPES = rules.DESTINATION_TYPES

#: The table's patterns, compiled once (``re.search``, as jsonschema).
_NO_SURROGATE = re.compile(rules.NO_SURROGATE).search
_NON_BLANK = re.compile(rules.NON_BLANK).search
_UUID = re.compile(rules.UUID).search
_BOOLEAN = re.compile(rules.BOOLEAN).search
_INTEGER = {None: re.compile(rules.INTEGER).search,
            0: re.compile(rules.NON_NEGATIVE_INTEGER).search}


def _fail(field: str, reason: str) -> ty.NoReturn:
    raise exception.InvalidRequest(field=field, reason=reason)


def _unsafe(field: str, reason: str) -> ty.NoReturn:
    raise exception.UnsafeRecord(field=field, reason=reason)


def _check_text(value: str, field: str) -> None:
    if not _NO_SURROGATE(value):
        _fail(field, 'is not valid Unicode text (it holds a lone surrogate)')


#: A UUID in its one spelling: lower case, with dashes, nothing around.
_CANONICAL_UUID = re.compile(
    r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z').match


def cinder_id(value: str | None) -> str | None:
    """A Cinder volume or snapshot id in the one spelling Nova and Cinder use.

    Cinder ids are UUIDs: any spelling :class:`uuid.UUID` reads (upper
    case, blanks around it, no dashes, braces, a ``urn:uuid:`` prefix)
    names the same volume or snapshot, and is given back lower case with
    dashes; anything else is given back without surrounding blanks.  The
    image record stores this spelling and the fingerprint is made from it,
    so one snapshot gets one image id however its ids were written.

    :returns: the canonical id; ``None`` (or ``''``) as given.
    """
    if not value or not isinstance(value, str):
        return value
    if _CANONICAL_UUID(value):
        # Already the one spelling (what Nova sends): no parse.
        return value
    text = value.strip()
    try:
        return str(uuid_mod.UUID(text))
    except ValueError:
        return text


def _str(data: dict, key: str, path: str, required: bool = False,
         max_len: int | None = None) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            _fail(path + key, 'is required')
        return None
    if not isinstance(value, str):
        _fail(path + key, 'must be a string, got %s' % type(value).__name__)
    _check_text(value, path + key)
    if required and not _NON_BLANK(value):
        _fail(path + key, 'must not be empty')
    if max_len is not None and len(value) > max_len:
        _fail(path + key, 'is %d characters long, at most %d allowed'
              % (len(value), max_len))
    return value


def _id(data: dict, key: str, path: str) -> str | None:
    """An id field (Cinder, Glance, key manager): a string, not blanks.

    Blanks alone name nothing, and the one spelling of an id
    (:func:`cinder_id`) strips them: such an id would be stored empty.
    """
    value = _str(data, key, path)
    if value and not _NON_BLANK(value):
        _fail(path + key, 'is blank: give the id, or leave the field out')
    return value


def _uuid(data: dict, key: str, path: str,
          required: bool = False) -> str | None:
    """A UUID (:data:`~.request_rules.UUID`), given back as written."""
    value = _str(data, key, path, required=required)
    if value is None:
        return None
    if not _UUID(value):
        _fail(path + key, 'must be a UUID, got %r' % value)
    return value


def _int(data: dict, key: str, path: str,
         minimum: int | None = None) -> int | None:
    """An integer, as JSON Schema and Nova's API read one.

    A JSON integer (a number with no fraction), or a string of digits
    (Nova's API pattern).
    """
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        _fail(path + key, 'must be an integer, got %r' % (value,))
    if isinstance(value, str):
        if not _INTEGER[minimum](value):
            _fail(path + key, 'must be an integer%s, got %r' % (
                ' >= %d (digits only)' % minimum if minimum is not None
                else '', value))
        value = int(value)
    if minimum is not None and value < minimum:
        _fail(path + key, 'must be >= %d, got %d' % (minimum, value))
    return value


def _bool(data: dict, key: str, path: str, default: bool = False) -> bool:
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and _BOOLEAN(value):
        return strutils.bool_from_string(value, strict=True)
    _fail(path + key, 'must be a boolean, got %r' % (value,))


def _str_dict(data: dict, key: str, path: str,
              allow_none: bool = False) -> dict[str, ty.Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        _fail(path + key, 'must be an object of string keys')
    for k, v in value.items():
        if not isinstance(k, str):
            _fail(path + key, 'key %r is not a string' % (k,))
        _check_text(k, path + key)
        if v is None and allow_none:
            continue
        if not isinstance(v, str):
            _fail('%s%s.%s' % (path, key, k),
                  'must be a string, got %s' % type(v).__name__)
        _check_text(v, '%s%s.%s' % (path, key, k))
    return dict(value)


def _str_list(data: dict, key: str, path: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(
            isinstance(v, str) for v in value):
        _fail(path + key, 'must be a list of strings')
    for item in value:
        _check_text(item, path + key)
    return list(value)


def _value(data: dict, key: str, path: str, field: rules.Field) -> ty.Any:
    """Check and read one field by its rule in the table.

    :returns: the value (integers and booleans given as strings read),
        ``None`` when absent or null (``[]``/``{}`` for a list/map).
    :raises InvalidRequest: naming ``<path><key>``.
    """
    kind = field.kind
    if kind == 'text':
        value = _str(data, key, path, required=field.required,
                     max_len=field.max_len)
        if value is not None and field.non_blank and not _NON_BLANK(value):
            _fail(path + key, 'must not be empty (omit it%s)' % (
                ' for a snapshot' if key == 'backup_type' else ''))
        return value
    if kind == 'id':
        return _id(data, key, path)
    if kind == 'uuid':
        return _uuid(data, key, path, required=field.required)
    if kind == 'integer':
        return _int(data, key, path, minimum=field.minimum)
    if kind == 'boolean':
        if data.get(key) is None:
            return None
        return _bool(data, key, path)
    if kind == 'enum':
        value = _str(data, key, path, required=field.required)
        if value is not None and value not in field.choices:
            _fail(path + key, 'must be one of %s, got %r'
                  % ('/'.join(field.choices), value))
        return value
    if kind == 'map':
        return _str_dict(data, key, path, allow_none=field.null_values)
    if kind == 'list':
        return _str_list(data, key, path)
    raise ValueError('no reader for field kind %r' % kind)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """The dataclass field names of ``cls``, in declaration order."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(
            f.name for f in dataclasses.fields(cls))
    return names


def _check_keys(data: ty.Any, allowed: ty.Iterable[str], path: str,
                ignored: ty.Iterable[str] = ()) -> None:
    if not isinstance(data, dict):
        _fail(path.rstrip('.') or '<request>', 'must be a JSON object')
    unknown = set(data) - set(allowed) - set(ignored)
    if unknown:
        _fail(path + sorted(unknown)[0],
              'is not a known field (known: %s)' % ', '.join(sorted(allowed)))


@dataclasses.dataclass
class BlockDeviceMapping:
    """One block device mapping of the server (Nova's BDM fields).

    ``volume_size`` is in GiB.  ``boot_index`` 0 is the root disk; ``None``
    or a negative value means "not bootable".
    """

    source_type: str
    destination_type: str | None = None
    boot_index: int | None = None
    device_name: str | None = None
    disk_bus: str | None = None
    device_type: str | None = None
    guest_format: str | None = None
    volume_id: str | None = None
    snapshot_id: str | None = None
    image_id: str | None = None
    volume_size: int | None = None
    delete_on_termination: bool = False
    no_device: bool = False
    tag: str | None = None
    volume_type: str | None = None
    encrypted: bool | None = None
    encryption_secret_uuid: str | None = None
    encryption_format: str | None = None
    encryption_options: str | None = None

    @property
    def is_volume(self) -> bool:
        """True for a Cinder volume (Nova's ``bdm.is_volume``)."""
        return self.destination_type == 'volume'

    @property
    def is_root(self) -> bool:
        return self.boot_index == 0

    @classmethod
    def from_dict(cls, data: ty.Any,
                  path: str = 'block_device_mappings[0].'
                  ) -> BlockDeviceMapping:
        """Validate and build one mapping.

        :raises InvalidRequest: naming ``<path><field>``.
        """
        _check_keys(data, _field_names(cls), path, BDM_IGNORED_KEYS)
        values = {}
        for name, field in rules.MAPPING.items():
            value = _value(data, name, path, field)
            if value is not None:
                values[name] = value
        bdm = cls(**values)
        check_image_mapping(bdm, path)
        return bdm


def check_image_mapping(bdm: BlockDeviceMapping, path: str) -> None:
    """Refuse a mapping Nova never writes into a snapshot image.

    A mapping copied as it is must not name a Cinder volume or snapshot:
    a server booted from the image would be handed the source server's
    in-use volume (``source_type`` ``volume`` without ``snapshot_id``) or
    a snapshot the image does not own.  See
    :func:`.mappings.mapping_refusal`.

    :raises InvalidRequest: a volume mapping without its snapshot id.
    :raises UnsafeRecord: any other mapping Nova never writes, naming
        ``<path><field>``.
    """
    refusal = mappings.mapping_refusal({
        'source_type': bdm.source_type,
        'destination_type': bdm.destination_type,
        'snapshot_id': bdm.snapshot_id, 'volume_id': bdm.volume_id,
        'no_device': bdm.no_device})
    if refusal is not None:
        field, reason, unsafe = refusal
        (_unsafe if unsafe else _fail)(path + field, reason)


def _check_device_names(bdms: ty.Sequence[BlockDeviceMapping]) -> None:
    """Refuse two mappings of one device name (one pass, one set).

    Nova adds ``/dev/`` to a name without it (``prepend_dev``), so
    ``vda`` and ``/dev/vda`` are one device; the key is the name without
    surrounding blanks and without one leading ``/dev/``.  Names are
    case-sensitive, as in Nova and the guest.

    ``no_device`` mappings are left out: in Nova they suppress a device
    rather than attach one (``snapshot_volume_backed`` compares an image
    mapping's name only with the mappings that are not ``no_device``, and
    a ``no_device`` entry of a name is how a mapping of the image is
    masked), so they take no name.  A mapping without a name gets one
    from Nova at boot and collides with none.

    :raises InvalidRequest: naming the second mapping's ``device_name``,
        and the first's in the reason.
    """
    seen: dict[str, int] = {}
    for i, bdm in enumerate(bdms):
        name = bdm.device_name
        if not name or bdm.no_device:
            continue
        key = name.strip()
        if key.startswith('/dev/'):
            key = key[5:]
        first = seen.setdefault(key, i)
        if first != i:
            _fail('block_device_mappings[%d].device_name' % i,
                  'device %r is already the device of '
                  'block_device_mappings[%d].device_name (%r): Nova adds '
                  '/dev/ to a name without it, and a server attaches one '
                  'disk per device name; give each mapping its own'
                  % (name, first, bdms[first].device_name))


@dataclasses.dataclass
class Server:
    """The server being snapshotted (Nova's instance fields)."""

    uuid: str
    project_id: str
    user_id: str | None = None
    vm_state: str = 'active'
    root_device_name: str | None = None
    image_ref: str | None = None
    system_metadata: dict[str, str] = dataclasses.field(default_factory=dict)
    image_metadata: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: ty.Any, path: str = 'server.') -> Server:
        _check_keys(data, _field_names(cls), path)
        values = {name: _value(data, name, path, field)
                  for name, field in rules.SERVER.items()}
        # null and '' are the default; another value not in the table's
        # choices is refused by validate (InvalidServerState, naming the
        # states a volume-backed snapshot allows).
        values['vm_state'] = values['vm_state'] or 'active'
        return cls(**values)


@dataclasses.dataclass
class Requester:
    """Who asked for the snapshot (the request context)."""

    project_id: str
    user_id: str | None = None
    roles: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def from_dict(cls, data: ty.Any, path: str = 'requester.') -> Requester:
        _check_keys(data, _field_names(cls), path)
        return cls(**{name: _value(data, name, path, field)
                      for name, field in rules.REQUESTER.items()})


@dataclasses.dataclass
class SnapshotRequest:
    """Everything needed to register a volume-backed snapshot image.

    :ivar name: image name (1..255 characters, Glance's limit).
    :ivar server: the server; see :class:`Server`.
    :ivar block_device_mappings: its mappings, volume ones carrying the new
        Cinder ``snapshot_id``.
    :ivar metadata: user metadata (``createImage``'s ``metadata``); wins
        over inherited properties.
    :ivar requester: the caller; when its project differs from the
        server's, the image is shared with the server's project.
    :ivar image_id: optional id for the image.  Without it the id is
        derived from the volume snapshot ids (one snapshot, one id: a retry
        finds the image instead of making a second one); a host that
        passes one must pass the same id on every retry.
    :ivar backup_type: set for a backup (Nova's ``createBackup``
        ``backup_type``, e.g. ``daily``): the image then says
        ``image_type=backup`` and carries this ``backup_type``, so the
        host's backup rotation of *this* server counts it.  ``None`` for a
        snapshot.
    """

    name: str
    server: Server
    block_device_mappings: list[BlockDeviceMapping]
    requester: Requester
    metadata: dict[str, str] = dataclasses.field(default_factory=dict)
    image_id: str | None = None
    backup_type: str | None = None

    @classmethod
    def from_dict(cls, data: ty.Any) -> SnapshotRequest:
        """Validate a JSON-shaped dict and build the request.

        A missing ``requester`` means the server's own project and user
        asked.

        :raises InvalidRequest: naming the offending field.
        :raises InvalidServerState: as :meth:`validate`.
        """
        request = cls._build(data)
        request._check_rules()
        request._remember_checked()
        return request

    @classmethod
    def from_file(cls, path: str) -> SnapshotRequest:
        """Read a request from a JSON file (UTF-8) and validate it.

        :param path: the file.
        :raises InvalidRequest: field ``<file>`` when the file cannot be
            read, is not JSON or is nested too deeply; else as
            :meth:`from_dict`.
        """
        try:
            with open(path, encoding='utf-8') as f:
                data = json.load(f)
        except OSError as err:
            raise exception.InvalidRequest(field='<file>', reason=str(err))
        except ValueError as err:
            raise exception.InvalidRequest(field='<file>',
                                           reason='not valid JSON: %s' % err)
        except RecursionError:
            raise exception.InvalidRequest(field='<file>',
                                           reason='JSON nested too deeply')
        return cls.from_dict(data)

    @classmethod
    def _build(cls, data: ty.Any) -> SnapshotRequest:
        """Check every field of a JSON-shaped dict and build the request.

        The rules that span fields are left to :meth:`validate`.

        :raises InvalidRequest: naming the offending field.
        """
        _check_keys(data, _field_names(cls), '')
        name = _value(data, 'name', '', rules.REQUEST['name'])
        server = Server.from_dict(data.get('server'))
        raw_bdms = data.get('block_device_mappings')
        if raw_bdms is None:
            raw_bdms = []
        if not isinstance(raw_bdms, list):
            _fail('block_device_mappings', 'must be a list')
        bdms = [BlockDeviceMapping.from_dict(
            b, path='block_device_mappings[%d].' % i)
            for i, b in enumerate(raw_bdms)]
        if data.get('requester') is None:
            requester = Requester(project_id=server.project_id,
                                  user_id=server.user_id)
        else:
            requester = Requester.from_dict(data['requester'])
        image_id = _value(data, 'image_id', '', rules.REQUEST['image_id'])
        if image_id is not None:
            # One spelling per id: Glance stores the id as sent, so
            # 'ABC...' and 'abc...' (or braces, no dashes) would be two
            # images of one snapshot.
            image_id = str(uuid_mod.UUID(image_id))
        backup_type = _value(data, 'backup_type', '',
                             rules.REQUEST['backup_type'])
        metadata = _value(data, 'metadata', '', rules.REQUEST['metadata'])
        armed = deletion.hazard(metadata)
        if armed is not None:
            _unsafe('metadata.%s' % armed[0],
                    '%s; this plugin deletes images (a failed attempt\'s '
                    'cleanup, backup rotation, audit --fix), so a snapshot '
                    'image never carries it: leave it out' % armed[1])
        return cls(name=ty.cast(str, name), server=server,
                   block_device_mappings=bdms, requester=requester,
                   metadata=metadata, image_id=image_id,
                   backup_type=backup_type)

    def _check_fields(self) -> bool:
        """Give a request built in Python the checks ``from_dict`` makes.

        A host that builds the dataclasses directly skips
        :meth:`from_dict`; its request is checked here field by field
        (same rules, same field paths) and normalised in place (integers
        given as strings become ints, ``image_id`` gets its one spelling).

        :returns: True when the request is unchanged since it last passed
            every check, the rules that span fields included (nothing was
            checked again); False when its fields were checked now.
        :raises InvalidRequest: naming the offending field.
        """
        parts = (('server', self.server, Server),
                 ('requester', self.requester, Requester))
        for field, value, kind in parts:
            if not isinstance(value, kind):
                _fail(field, 'must be a %s, got %s'
                      % (kind.__name__, type(value).__name__))
        if not isinstance(self.block_device_mappings, list):
            _fail('block_device_mappings', 'must be a list')
        for i, bdm in enumerate(self.block_device_mappings):
            if not isinstance(bdm, BlockDeviceMapping):
                _fail('block_device_mappings[%d]' % i,
                      'must be a BlockDeviceMapping, got %s'
                      % type(bdm).__name__)
        if not isinstance(self.metadata, dict):
            _fail('metadata', 'must be an object of string keys')
        if self._checked_state() == self.__dict__.get(_CHECKED):
            # Unchanged since it last passed every check (in from_dict or
            # an earlier validate): the same values of the same types
            # pass the same checks and the same rules.
            return True
        checked = self._build(self._fields_dict())
        for name in _field_names(type(self)):
            setattr(self, name, getattr(checked, name))
        return False

    def _checked_state(self) -> list[ty.Any]:
        """Every field's type and value, containers copied.

        What :meth:`_check_fields` compares with the state it last
        checked: a field reassigned, a mapping added or removed, a
        container changed in place, or a value of another type (``1``
        against ``True`` or ``'1'``) all differ from it.

        :returns: ``[types, head, rows]``: the type of every value (one
            C-level pass), the request's, server's and requester's values
            with their dicts and lists copied, and each mapping's values
            as a tuple.  A mapping's fields pass their checks only as
            scalars (``str``, ``int``, ``bool``, ``None``), so a checked
            state's rows hold nothing mutable; a container put there
            later is another type, and differs.
        """
        head: list[ty.Any] = [len(self.block_device_mappings)]
        head += _REQUEST_SCALARS(self)
        head += _SERVER_VALUES(self.server)
        head += _REQUESTER_VALUES(self.requester)
        rows = [_BDM_VALUES(bdm) for bdm in self.block_device_mappings]
        types = tuple(map(type, itertools.chain(head, *rows)))
        return [types, [dict(v) if type(v) is dict
                        else tuple(v) if type(v) is list else v
                        for v in head], rows]

    def _remember_checked(self) -> None:
        """Record the state that has just passed every check."""
        # Outside the dataclass fields: not compared, not in to_dict.
        self.__dict__[_CHECKED] = self._checked_state()

    def _fields_dict(self) -> dict[str, ty.Any]:
        # The JSON form without asdict's deep copy (validate runs on every
        # snapshot): _build copies what it keeps.
        def fields(obj: ty.Any) -> dict[str, ty.Any]:
            return {f.name: getattr(obj, f.name)
                    for f in dataclasses.fields(obj)}
        data = fields(self)
        data['server'] = fields(self.server)
        data['requester'] = fields(self.requester)
        data['block_device_mappings'] = [
            fields(b) for b in self.block_device_mappings]
        return data

    def validate(self) -> None:
        """Check the request; every entry point calls this.

        Every call first makes every field check ``from_dict`` makes (see
        :meth:`_check_fields`), whether the request was built from the
        dataclasses or by :meth:`from_dict` and changed since (a host that
        fills in the volume snapshot ids after building it); then the
        rules that span fields are checked.  A request unchanged since it
        last passed both (in :meth:`from_dict` or an earlier call) is not
        checked again; one that failed is checked again on every call.

        :raises InvalidRequest: a field is malformed (named as a path,
            e.g. ``block_device_mappings[1].volume_size``), the server is
            not volume-backed, or has no root mapping (``boot_index`` 0:
            the image could not boot) or more than one.
        :raises InvalidServerState: the vm_state does not allow a
            volume-backed snapshot.
        """
        if self._check_fields():
            return
        self._check_rules()
        # Only a request that passed the rules too is remembered as
        # checked: one that failed them is checked again next time.
        self._remember_checked()

    def _check_rules(self) -> None:
        """The rules that span fields (see :meth:`validate`)."""
        if self.server.vm_state not in SNAPSHOT_VM_STATES:
            raise exception.InvalidServerState(
                instance_uuid=self.server.uuid,
                vm_state=self.server.vm_state,
                allowed=', '.join(SNAPSHOT_VM_STATES))
        roots = [i for i, b in enumerate(self.block_device_mappings)
                 if b.is_root and not b.no_device]
        if len(roots) > 1:
            _fail('block_device_mappings[%d].boot_index' % roots[1],
                  'a second mapping with boot_index 0; a server has one '
                  'root disk')
        _check_device_names(self.block_device_mappings)
        if not self.is_volume_backed():
            _fail('block_device_mappings',
                  'server %s is not volume-backed (its root disk is not a '
                  'volume); take a regular snapshot instead'
                  % self.server.uuid)
        if not roots:
            _fail('block_device_mappings',
                  'no mapping has boot_index 0 (the root disk): an image '
                  'without one cannot boot (Nova refuses its boot '
                  'sequence); give the root volume\'s mapping boot_index 0')
        seen: dict[str, int] = {}
        volumes: dict[str, int] = {}
        for i, bdm in enumerate(self.block_device_mappings):
            if not bdm.is_volume or bdm.no_device:
                continue
            # Cinder ids are UUIDs: the same id in another spelling names
            # the same snapshot or volume.
            volume = (cinder_id(bdm.volume_id) or '').lower()
            if volume and volume in volumes:
                # A volume is attached to a server once: two mappings of
                # one volume are one disk counted twice.
                _fail('block_device_mappings[%d].volume_id' % i,
                      'volume %s is already the volume of mapping %d; a '
                      'server\'s mappings name each volume once'
                      % (bdm.volume_id, volumes[volume]))
            if volume:
                volumes[volume] = i
            snapshot = (cinder_id(bdm.snapshot_id) or '').lower()
            if not snapshot:
                continue
            if snapshot in seen:
                # A Cinder snapshot is of one volume: two mappings naming
                # it would boot a copy of one disk in place of another
                # (and the snapshot's fingerprint would not tell them
                # apart).
                _fail('block_device_mappings[%d].snapshot_id' % i,
                      'snapshot %s is already the snapshot of mapping %d; '
                      'each volume mapping carries the snapshot of its own '
                      'volume' % (bdm.snapshot_id, seen[snapshot]))
            seen[snapshot] = i
        if not any(b.is_volume and not b.no_device
                   for b in self.block_device_mappings):
            _fail('block_device_mappings',
                  'no volume mapping: a volume-backed snapshot image points '
                  'at the snapshots of the server\'s volumes; without one '
                  'it cannot boot (and a retry could not be recognised)')

    def is_volume_backed(self) -> bool:
        """Nova's ``compute_utils.is_volume_backed_instance`` rule.

        The root mapping (boot_index 0) decides; without one, a server
        with no ``image_ref`` is volume-backed (Nova's legacy fallback).
        """
        for bdm in self.block_device_mappings:
            if bdm.is_root and not bdm.no_device:
                return bdm.is_volume
        return not self.server.image_ref

    def to_dict(self) -> dict[str, ty.Any]:
        """The JSON form (the inverse of :meth:`from_dict`)."""
        return dataclasses.asdict(self)


#: Where :meth:`SnapshotRequest._check_fields` keeps the state it checked.
_CHECKED = '_checked_fields'
_NESTED = ('server', 'requester', 'block_device_mappings')
_REQUEST_SCALARS = operator.attrgetter(*[
    n for n in _field_names(SnapshotRequest) if n not in _NESTED])
_SERVER_VALUES = operator.attrgetter(*_field_names(Server))
_REQUESTER_VALUES = operator.attrgetter(*_field_names(Requester))
_BDM_VALUES = operator.attrgetter(*_field_names(BlockDeviceMapping))
