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

"""Checks that can fail without side effects (design rule 2).

:func:`check_image_record` refuses, before anything exists in Glance,
every image record the target Glance would refuse.  Rules and sources
(Glance 33, ``glance/api/v2/images.py`` ``RequestDeserializer`` and
``glance/domain`` ``ImageFactory``; verified against a real Glance):

* names starting ``os_glance`` are reserved (403);
* ``location``, ``locations``, ``owner``, ``deleted``, ``deleted_at`` are
  reserved (403), read-only attributes cannot be set (403);
* other base attributes of the image schema (``visibility``,
  ``protected``, ``tags``...) are not custom properties;
* property names longer than 255 characters are refused (400);
* custom property values must be strings (400; glanceclient raises
  ``TypeError`` before sending);
* more than ``image_property_quota`` properties (default 128, ``os_glance``
  keys not counted) is refused (413); the record's optional properties
  (its self-description, the driver's stamped keys) are left out first,
  with a warning, so a record is never refused for what the plugin added;
* more tags than ``image_tag_quota`` (default 128; Glance answers 413):
  the record carries one tag per volume snapshot (:mod:`.tags`), which
  cannot be left out, so a server with more volumes than the quota is
  refused, naming the option;
* names in the schema's ``required`` list must be present (Glance >= 32);
* every value must satisfy its definition in this Glance's image schema,
  with every JSON-schema keyword Glance's schema uses (``type``, ``enum``,
  ``pattern``, ``maxLength``, ``minimum``/``maximum``...): the stock
  ``schema-image.json`` of distributions requires uuids for
  ``kernel_id``/``ramdisk_id``, enums for ``architecture``,
  ``os_distro``...  The check is ``jsonschema``'s (the library
  glanceclient and Glance validate with), so it judges as Glance does;
* what the production database under Glance would refuse (keys equal
  under MySQL's collation, values over 65,535 bytes, NUL): the rules of
  MySQL/MariaDB and PostgreSQL apply whatever database this Glance runs
  on, since a plugin cannot see it (:mod:`.database_rules`).
"""

from __future__ import annotations

import dataclasses
import re
import typing as ty

import jsonschema
from oslo_log import log as logging

from nova_snapshot_ext import exception

from nova_snapshot_ext.snapshot import database_rules
from nova_snapshot_ext.snapshot import metadata as metadata_mod

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.image import capabilities as caps_mod

LOG = logging.getLogger(__name__)

MAX_KEY_LENGTH = 255

#: Glance refuses these on create: 403 "Attribute 'x' is read-only."
READ_ONLY = frozenset([
    'created_at', 'updated_at', 'status', 'checksum', 'size',
    'virtual_size', 'os_hash_algo', 'os_hash_value', 'direct_url', 'self',
    'file', 'schema', 'stores'])

#: Glance refuses these: 403 "Attribute 'x' is reserved."
RESERVED = frozenset(['location', 'locations', 'owner', 'deleted',
                      'deleted_at', 'id'])

RESERVED_PREFIX = 'os_glance'

#: Base attributes the plugin sets itself from the record.
PLUGIN_ATTRIBUTES = frozenset(['id', 'name', 'visibility', 'min_ram',
                               'min_disk', 'disk_format',
                               'container_format'])


def check_property_name(key: str,
                        base_attributes: ty.Collection[str] = ()) -> None:
    """Refuse a custom property name Glance would refuse.

    :raises ReservedProperty: ``os_glance*``, reserved, or a base
        attribute of the image schema.
    :raises ReadOnlyProperty: a read-only attribute.
    :raises PropertyNameTooLong: longer than 255 characters.
    """
    if key.startswith(RESERVED_PREFIX):
        raise exception.ReservedProperty(
            property=key, reason="the 'os_glance' namespace is Glance's own")
    if database_rules.in_glance_namespace(key):
        raise exception.ReservedProperty(
            property=key, reason="on a MySQL/MariaDB Glance it is the same "
            "name as Glance's own 'os_glance' namespace (utf8mb3_general_ci "
            "ignores case and accents), where Glance writes its import and "
            "location-add state")
    if key in READ_ONLY:
        raise exception.ReadOnlyProperty(property=key)
    if key in RESERVED:
        raise exception.ReservedProperty(
            property=key, reason='Glance reserves this attribute')
    if key in base_attributes:
        raise exception.ReservedProperty(
            property=key, reason='it is a base attribute of the image '
            'schema, not a custom property')
    if len(key) > MAX_KEY_LENGTH:
        raise exception.PropertyNameTooLong(property=key[:40],
                                            length=len(key))


#: Glance's integer columns (``min_ram``, ``min_disk``) are 32-bit.
MAX_INT = 2 ** 31 - 1


#: Characters outside the Basic Multilingual Plane (4 bytes in UTF-8).
_NON_BMP_RE = re.compile('[\U00010000-\U0010FFFF]')


def _check_bmp(what: str, key: str, text: str) -> None:
    # Glance refuses 4-byte UTF-8 characters in image attributes and
    # properties (glance.common.utils.no_4byte_params, for MySQL's utf8).
    # ASCII text (the mappings' JSON, most values) has none: str.isascii
    # answers without scanning a compact string.
    if text.isascii():
        return
    match = _NON_BMP_RE.search(text)
    if match:
        raise exception.UnsupportedCharacter(
            what=what, property=key[:40], char='U+%04X' % ord(match.group()))


def _short(value: ty.Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + '...'


#: id(definition) -> (definition, its jsonschema validator, the values
#: it accepted).  The definitions come from the cached capabilities, so
#: one validator serves every snapshot (building one costs more than
#: validating a value), and a value it accepted once (the inherited
#: ``os_type``, ``hw_disk_bus``... of every snapshot of a server) is not
#: validated again.
_VALIDATORS: dict[int, tuple[ty.Mapping[str, ty.Any], ty.Any,
                             set[tuple[type, ty.Any]]]] = {}

#: Accepted values longer than this are not remembered (validated each
#: time); nor more than :data:`_ACCEPTED_KEPT` of them per definition.
_ACCEPTED_LENGTH = 255
_ACCEPTED_KEPT = 1024


def _validator(definition: ty.Mapping[str, ty.Any]
               ) -> tuple[ty.Any, set[tuple[type, ty.Any]]]:
    cached = _VALIDATORS.get(id(definition))
    if cached is not None and cached[0] is definition:
        return cached[1], cached[2]
    cls = jsonschema.validators.validator_for(
        definition, default=jsonschema.Draft4Validator)
    validator = cls(definition)
    if len(_VALIDATORS) >= 4096:
        _VALIDATORS.clear()
    accepted: set[tuple[type, ty.Any]] = set()
    _VALIDATORS[id(definition)] = (definition, validator, accepted)
    return validator, accepted


#: The base attributes a name was judged against -> the property names
#: that passed :func:`check_property_name` and the 4-byte check there (a
#: name's verdict depends on nothing else; every snapshot of a cloud
#: carries mostly the same names).
_NAMES_PASSED: dict[frozenset[str], set[str]] = {}


def _names_passed(base_names: frozenset[str]) -> set[str]:
    passed = _NAMES_PASSED.get(base_names)
    if passed is None:
        if len(_NAMES_PASSED) >= 64:
            _NAMES_PASSED.clear()
        passed = _NAMES_PASSED.setdefault(base_names, set())
    return passed


def check_schema_value(key: str, value: ty.Any,
                       definition: ty.Mapping[str, ty.Any]) -> None:
    """Refuse a value its image-schema definition does not allow.

    :param key: attribute or property name (for the message).
    :param value: the value as it will be sent.
    :param definition: the schema's ``properties[key]`` object.
    :raises PropertyValueTooLong: ``maxLength`` exceeded.
    :raises PreflightError: any other keyword fails (``type``, ``enum``,
        ``pattern``, ``minimum``...), naming the key, the value and the
        keyword.
    """
    validator, accepted = _validator(definition)
    # By type too: True == 1, but a schema may take one and not the other.
    seen = ((type(value), value) if isinstance(value, (str, int)) and not (
        isinstance(value, str) and len(value) > _ACCEPTED_LENGTH) else None)
    if seen is not None and seen in accepted:
        return
    if validator.is_valid(value):
        if seen is not None:
            if len(accepted) >= _ACCEPTED_KEPT:
                accepted.clear()
            accepted.add(seen)
        return
    errors = sorted(validator.iter_errors(value),
                    key=lambda e: str(e.validator))
    error = errors[0]
    if error.validator == 'maxLength' and isinstance(value, str):
        raise exception.PropertyValueTooLong(
            property=key, length=len(value), limit=error.validator_value)
    if error.validator == 'enum':
        why = 'must be one of %s' % ', '.join(
            'null' if v is None else str(v) for v in error.validator_value)
    elif error.validator == 'pattern':
        why = 'must match the pattern %s' % error.validator_value
    else:
        why = '%s %s' % (error.validator, _short(error.validator_value))
    what = 'attribute' if key in GLANCE_BASE_ATTRIBUTES else 'property'
    raise exception.PreflightError(
        reason="image %s '%s' = %s is refused by this Glance's image "
        "schema (%s)" % (what, key, _short(value), why))


@dataclasses.dataclass(frozen=True)
class RecordChanges:
    """What a record must give up for this Glance to accept it.

    Returned by :func:`check_image_record`, applied by :meth:`apply`: the
    one place a preflight changes a record.

    :ivar optional: bookkeeping keys to mark optional (they give way to
        the property quota and to a schema that refuses them).
    :ivar left_out: optional properties to leave out, in order.
    :ivar notes: why each was left out, for the result.
    """

    optional: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def apply(self, record: metadata_mod.ImageRecord) -> None:
        """Make the changes to ``record`` and log each note."""
        for key in self.optional:
            if key not in record.optional:
                record.optional.append(key)
        for key in self.left_out:
            record.properties.pop(key, None)
            if key in record.optional:
                record.optional.remove(key)
        for note in self.notes:
            record.notes.append(note)
            LOG.warning('Snapshot image %(name)s: %(note)s',
                        {'name': record.name, 'note': note})


def check_image_record(record: metadata_mod.ImageRecord,
                       capabilities: caps_mod.GlanceCapabilities,
                       property_quota: int = 128,
                       tag_quota: int = 128) -> RecordChanges:
    """Refuse ``record`` if this Glance would refuse to create it.

    The record is not changed: optional properties that must give way
    (to a schema that refuses them, to the property quota) are returned.

    :param record: the image record.
    :param capabilities: this Glance's capabilities.
    :param property_quota: ``[snapshot_ext] image_property_quota``; -1 is
        unlimited.
    :param tag_quota: ``[snapshot_ext] image_tag_quota``; -1 is unlimited.
    :returns: the :class:`RecordChanges` (apply them before creating).
    :raises PreflightError: one of its subclasses, naming the property.
    """
    schema_props = capabilities.schema_properties
    _check_attributes(record, schema_props, tag_quota)
    properties = dict(record.properties)
    optional = list(record.optional)
    marked = [key for key in metadata_mod.BOOKKEEPING_KEYS
              if key in properties and key not in optional]
    optional += marked
    # Every base attribute, including those the plugin sets itself from
    # the record (name, visibility, min_ram...): such a key among the
    # properties came from user metadata and would be silently replaced.
    base_names = frozenset(
        (capabilities.base_attributes | PLUGIN_ATTRIBUTES) -
        _custom_schema_keys(schema_props))
    left_out, notes = _check_properties(properties, optional, schema_props,
                                        base_names)
    dropped = _fit_property_quota(properties, optional, property_quota)
    if dropped:
        left_out += dropped
        notes.append('left out %s to stay within image_property_quota %d'
                     % (', '.join(dropped), property_quota))
    # What the production database would refuse, judged on the
    # properties as they will be sent.
    for key, note in database_rules.check_record(
            record.name, properties, [k for k in optional
                                      if k in properties],
            getattr(record, 'member', None)):
        del properties[key]
        left_out.append(key)
        notes.append(note)
    present = set(properties) | PLUGIN_ATTRIBUTES
    for name in capabilities.required:
        if name not in present:
            raise exception.RequiredPropertyMissing(property=name)
    return RecordChanges(tuple(marked), tuple(left_out), tuple(notes))


def _check_attributes(record: metadata_mod.ImageRecord,
                      schema_props: ty.Mapping[str, ty.Any],
                      tag_quota: int) -> None:
    """The record's base attributes and tags against this Glance.

    :raises PreflightError: a subclass naming the attribute.
    """
    if len(record.name) > MAX_KEY_LENGTH:
        raise exception.PropertyValueTooLong(
            property='name', length=len(record.name), limit=MAX_KEY_LENGTH)
    _check_bmp('attribute', 'name', record.name)
    if 0 <= tag_quota < len(record.tags):
        raise exception.TagQuotaExceeded(count=len(record.tags),
                                         quota=tag_quota)
    for attr in ('min_ram', 'min_disk'):
        value = getattr(record, attr)
        limit = (schema_props.get(attr) or {}).get('maximum', MAX_INT)
        if not 0 <= value <= limit:
            raise exception.PreflightError(
                reason='%s is %d; Glance accepts 0 to %d' % (
                    attr, value, limit))
    for attr in ('name', 'visibility', 'min_ram', 'min_disk'):
        definition = schema_props.get(attr)
        if isinstance(definition, dict):
            check_schema_value(attr, getattr(record, attr), definition)


def _check_properties(properties: dict[str, ty.Any], optional: list[str],
                      schema_props: ty.Mapping[str, ty.Any],
                      base_names: frozenset[str]
                      ) -> tuple[list[str], list[str]]:
    """Every property's name, type and value against this Glance.

    An optional property the schema refuses gives way: it is removed
    from ``properties`` and ``optional``.

    :returns: ``(keys left out, notes saying why)``.
    :raises PreflightError: a subclass naming a required property.
    """
    left_out: list[str] = []
    notes: list[str] = []
    names_passed = _names_passed(base_names)
    for key, value in sorted(properties.items()):
        # In the order of the checks themselves: the name's rules, the
        # value's type, then the name's characters.
        passed = key in names_passed
        if not passed:
            check_property_name(key, base_names)
        if not isinstance(value, str):
            raise exception.PropertyValueNotString(
                property=key, type=type(value).__name__)
        if not passed:
            _check_bmp('property', key, key)
            if len(names_passed) < _ACCEPTED_KEPT:
                names_passed.add(key)
        _check_bmp('property value of', key, value)
        definition = schema_props.get(key)
        if not isinstance(definition, dict):
            continue
        try:
            check_schema_value(key, value, definition)
        except exception.PreflightError as err:
            if key not in optional:
                raise
            optional.remove(key)
            del properties[key]
            left_out.append(key)
            notes.append('left out %s: %s' % (key, err.format_message()))
    return left_out, notes


def _fit_property_quota(properties: dict[str, ty.Any], optional: list[str],
                        property_quota: int) -> list[str]:
    """Drop optional properties, in order, until the quota holds.

    Glance's reserved (``os_glance``) keys do not count.

    :returns: the keys removed from ``properties``.
    :raises PropertyQuotaExceeded: the required ones alone exceed it.
    """
    counted = [k for k in properties if not k.startswith(RESERVED_PREFIX)]
    if property_quota < 0 or len(counted) <= property_quota:
        return []
    over = len(counted) - property_quota
    giving = [k for k in optional if k in properties]
    if over > len(giving):
        raise exception.PropertyQuotaExceeded(
            count=len(counted) - len(giving), quota=property_quota)
    dropped = giving[:over]
    for key in dropped:
        del properties[key]
    return dropped


#: Base attributes a Glance schema always defines (``get_base_properties``).
#: Anything else in ``properties`` was added by the operator's
#: ``schema-image.json`` and is a custom property with constraints.
GLANCE_BASE_ATTRIBUTES = frozenset([
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
    'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
    'virtual_size', 'container_format', 'disk_format', 'created_at',
    'updated_at', 'tags', 'direct_url', 'min_ram', 'min_disk', 'self',
    'file', 'stores', 'schema', 'locations'])


def _custom_schema_keys(schema_props: ty.Mapping[str, ty.Any]) -> set[str]:
    return set(schema_props) - GLANCE_BASE_ATTRIBUTES
