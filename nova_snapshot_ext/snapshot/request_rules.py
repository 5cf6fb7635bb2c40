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

"""The snapshot request's rules, declared once.

One table (:data:`REQUEST`, :data:`SERVER`, :data:`REQUESTER`,
:data:`MAPPING`) says, for every field of the request, what it accepts;
the regular expressions below say what a string of each kind may be.
Both consumers read them:

* :mod:`nova_snapshot_ext.snapshot.request` validates a request field by
  field with them (``from_dict``, ``validate``);
* :func:`schema` builds the JSON Schema (2020-12) from them, with the
  rules that span fields that JSON Schema can say (one root mapping, a
  volume root, the mappings Nova writes, the deletion policy).  The
  shipped ``nova_snapshot_ext/data/snapshot-request.schema.json`` is its
  output (``python -m nova_snapshot_ext.snapshot.request_rules``); a unit
  test holds the file equal to it, and another runs thousands of
  generated requests through both and holds them to the same answer.

The patterns are written for both Python's ``re`` (what ``jsonschema``
and the validator use, with ``re.search``) and ECMA-262: a string's true
end is ``(?![\\s\\S])`` (Python's ``$`` also matches before a final
newline).

What JSON Schema cannot say stays in the validator alone, and the schema
says so (:data:`NOT_IN_SCHEMA`): that each device name, volume and volume
snapshot is named by one mapping only, in any spelling.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import typing as ty

from oslo_utils import strutils

from nova_snapshot_ext.snapshot import deletion

#: A string's true end (both regex dialects).
END = r'(?![\s\S])'
#: No lone surrogate anywhere (JSON can carry one; UTF-8 cannot).
NO_SURROGATE = r'^[^\ud800-\udfff]*' + END
#: Not blanks alone (``str.strip``'s blanks are ``\s``).
NON_BLANK = r'\S'
#: An id: empty, or not blanks alone.
ID = r'^' + END + r'|\S'
#: An integer written as a string (Nova's API pattern for ``boot_index``).
INTEGER = r'^-?[0-9]+' + END
#: A non-negative integer written as a string (Nova's ``volume_size``).
NON_NEGATIVE_INTEGER = r'^[0-9]+' + END


def _any_case(word: str) -> str:
    return ''.join('[%s%s]' % (c.lower(), c.upper()) if c.isalpha() else
                   re.escape(c) for c in word)


def _words(words: ty.Iterable[str]) -> str:
    ordered = sorted(words, key=len, reverse=True)
    return r'^\s*(?:%s)\s*%s' % ('|'.join(map(_any_case, ordered)), END)


#: A boolean written as a string: what ``oslo_utils.strutils.
#: bool_from_string(strict=True)`` reads (blanks around, any case).
TRUE = _words(strutils.TRUE_STRINGS)
FALSE = _words(strutils.FALSE_STRINGS)
BOOLEAN = _words(strutils.TRUE_STRINGS + strutils.FALSE_STRINGS)

_HEX = '[0-9a-fA-F]'
_UUID_BODY = '-?'.join('%s{%d}' % (_HEX, n) for n in (8, 4, 4, 4, 12))
#: A UUID: 32 hex digits (dashes where the canonical form has them, or
#: none), in braces or not, ``urn:uuid:`` before it or not.
UUID = r'^(?:urn:uuid:)?(?:\{%s\}|%s)%s' % (_UUID_BODY, _UUID_BODY, END)

#: vm_states from which Nova's ``snapshot_volume_backed`` may run
#: (``nova/compute/api.py`` ``@check_instance_state``).
SNAPSHOT_VM_STATES = ('active', 'stopped', 'paused', 'suspended')
SOURCE_TYPES = ('volume', 'snapshot', 'image', 'blank')
DESTINATION_TYPES = ('volume', 'local')
#: What a local disk is made from (see ``mappings.mapping_refusal``).
LOCAL_SOURCE_TYPES = ('blank', 'image')

#: Keys of Nova's BDM records that never reach an image mapping
#: (``nova/block_device.py`` db-only/inherited fields + connection_info).
BDM_IGNORED_KEYS = ('id', 'uuid', 'instance_uuid', 'attachment_id',
                    'connection_info', 'created_at', 'updated_at',
                    'deleted_at', 'deleted', 'instance')

#: The rules JSON Schema cannot express: checked by the validator only.
NOT_IN_SCHEMA = (
    'each device_name is named by one mapping only (vda and /dev/vda are '
    'one device; no_device mappings do not count)',
    'each volume_id and each snapshot_id of a volume mapping is named by '
    'one mapping only, in any UUID spelling',
)


@dataclasses.dataclass(frozen=True)
class Field:
    """What one field accepts.

    :ivar kind: ``text``, ``id``, ``uuid``, ``integer``, ``boolean``,
        ``enum``, ``map`` (string keys and values), ``list`` (of
        strings), or ``object``/``mappings`` (nested, described by their
        own table).
    :ivar required: must be present and not null (``text``: not blanks
        alone either).
    :ivar max_len: most characters.
    :ivar minimum: smallest integer.
    :ivar choices: ``enum``'s values; for ``text``, the values allowed
        besides null and ``''`` (which mean the default).
    :ivar non_blank: a given (non-null) value may not be blanks alone.
    :ivar null_values: ``map``: null values allowed (skipped).
    :ivar description: for people (the schema's).
    """

    kind: str
    required: bool = False
    max_len: int | None = None
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    non_blank: bool = False
    null_values: bool = False
    description: str = ''


#: The top level of a request.
REQUEST: dict[str, Field] = {
    'name': Field('text', required=True, max_len=255,
                  description='The image name, 1 to 255 characters, not '
                  'only white space.'),
    'server': Field('object', required=True),
    'block_device_mappings': Field(
        'mappings', description="The server's block device mappings; "
        'volume mappings carry the snapshot_id of the Cinder snapshot '
        'the host took. Exactly one (not no_device) has boot_index 0 '
        'and it is a volume mapping.'),
    'requester': Field('object', description='Who asked (the request '
                       "context). Missing or null: the server's own "
                       'project and user.'),
    'metadata': Field('map', description='User metadata (createImage\'s '
                      'metadata): string values; wins over inherited '
                      'properties. cinder_encryption_key_deletion_policy '
                      'may not be on_image_deletion.'),
    'image_id': Field('uuid', description='Optional image id (a UUID, '
                      'stored in its canonical form). Without it the id '
                      'is derived from the volume snapshot ids, so a '
                      'retry finds the image.'),
    'backup_type': Field('text', max_len=255, non_blank=True,
                         description="Set for a backup (Nova's "
                         'createBackup backup_type, e.g. daily). Omit it '
                         'for a snapshot.'),
}

#: ``server``.
SERVER: dict[str, Field] = {
    'uuid': Field('uuid', required=True, description='The instance uuid.'),
    'project_id': Field('text', required=True, max_len=255,
                        description="The server's project."),
    'user_id': Field('text', max_len=255),
    'vm_state': Field('text', choices=SNAPSHOT_VM_STATES,
                      description='Default active; a volume-backed '
                      'snapshot needs active, stopped, paused or '
                      'suspended.'),
    'root_device_name': Field('text', max_len=255),
    'image_ref': Field('text', description='Empty for a server booted '
                       'from a volume.'),
    'system_metadata': Field('map', null_values=True, description="Nova's "
                             'instance system metadata (image properties '
                             'under the image_ prefix).'),
    'image_metadata': Field('map', null_values=True, description='The '
                            'same image properties already unprefixed.'),
}

#: ``requester``.
REQUESTER: dict[str, Field] = {
    'project_id': Field('text', required=True, max_len=255),
    'user_id': Field('text', max_len=255),
    'roles': Field('list'),
}

#: ``block_device_mappings[]``.
MAPPING: dict[str, Field] = {
    'source_type': Field('enum', required=True, choices=SOURCE_TYPES),
    'destination_type': Field('enum', choices=DESTINATION_TYPES,
                              description='Required unless no_device.'),
    'boot_index': Field('integer', description='0: the root disk; null or '
                        'negative: not bootable.'),
    'device_name': Field('text', max_len=255),
    'disk_bus': Field('text'),
    'device_type': Field('text'),
    'guest_format': Field('text'),
    'volume_id': Field('id'),
    'snapshot_id': Field('id', description='Required on a volume mapping '
                         '(destination_type volume) unless no_device.'),
    'image_id': Field('id'),
    'volume_size': Field('integer', minimum=0, description='GiB, 0 or '
                         'more.'),
    'delete_on_termination': Field('boolean'),
    'no_device': Field('boolean'),
    'tag': Field('text'),
    'volume_type': Field('text'),
    'encrypted': Field('boolean'),
    'encryption_secret_uuid': Field('id'),
    'encryption_format': Field('text'),
    'encryption_options': Field('text'),
}


# --- the JSON Schema, built from the table --------------------------------

def _string(*patterns: str, **extra: ty.Any) -> dict[str, ty.Any]:
    """A string schema with every pattern (``allOf`` past the first)."""
    out: dict[str, ty.Any] = {'type': 'string'}
    out.update(extra)
    all_patterns = (NO_SURROGATE,) + patterns
    out['pattern'] = all_patterns[0]
    if len(all_patterns) > 1:
        out['allOf'] = [{'pattern': p} for p in all_patterns[1:]]
    return out


def _nullable(schema: dict[str, ty.Any]) -> dict[str, ty.Any]:
    return {'anyOf': [{'type': 'null'}, schema]}


def field_schema(field: Field) -> dict[str, ty.Any]:
    """The JSON Schema of one field's value (null too unless required)."""
    kind = field.kind
    if kind == 'text':
        if field.choices:
            # null and '' mean the default; any other value one of these.
            out: dict[str, ty.Any] = {'enum': [None, ''] + list(
                field.choices)}
        else:
            patterns = (NON_BLANK,) if (field.required or
                                        field.non_blank) else ()
            extra = {}
            if field.max_len is not None:
                extra['maxLength'] = field.max_len
            out = _string(*patterns, **extra)
            if not field.required:
                out = _nullable(out)
    elif kind == 'id':
        out = _nullable(_string(ID))
    elif kind == 'uuid':
        out = _string(UUID)
        if not field.required:
            out = _nullable(out)
    elif kind == 'integer':
        text = (NON_NEGATIVE_INTEGER if field.minimum == 0 else INTEGER)
        number: dict[str, ty.Any] = {'type': 'integer'}
        if field.minimum is not None:
            number['minimum'] = field.minimum
        out = {'anyOf': [{'type': 'null'}, number, _string(text)]}
    elif kind == 'boolean':
        out = {'anyOf': [{'type': 'null'}, {'type': 'boolean'},
                         _string(BOOLEAN)]}
    elif kind == 'enum':
        out = {'enum': list(field.choices) + (
            [] if field.required else [None])}
    elif kind == 'map':
        value = _string()
        out = {'type': ['object', 'null'],
               'propertyNames': {'pattern': NO_SURROGATE},
               'additionalProperties': (_nullable(value)
                                        if field.null_values else value)}
    elif kind == 'list':
        out = {'type': ['array', 'null'], 'items': _string()}
    else:  # pragma: no cover - a table entry without a schema
        raise ValueError('no schema for field kind %r' % kind)
    if field.description:
        out = dict({'description': field.description}, **out)
    return out


def _object(fields: dict[str, Field],
            ignored: ty.Iterable[str] = ()) -> dict[str, ty.Any]:
    properties = {name: field_schema(f) for name, f in fields.items()
                  if f.kind not in ('object', 'mappings')}
    for name in ignored:
        properties[name] = {'description': 'Ignored (Nova database '
                            'record only; connection_info is never '
                            'copied).'}
    return {'type': 'object',
            'required': [n for n, f in fields.items() if f.required],
            'additionalProperties': False,
            'properties': properties}


def _present(name: str, schema: dict[str, ty.Any]) -> dict[str, ty.Any]:
    """``name`` is present and its value matches ``schema``."""
    return {'required': [name], 'properties': {name: schema}}


#: The value is true as the request reads a boolean.
_IS_TRUE = {'anyOf': [{'const': True},
                      {'type': 'string', 'pattern': TRUE}]}
#: The value is the integer 0 as the request reads an integer.
_IS_ZERO = {'anyOf': [{'type': 'integer', 'const': 0},
                      {'type': 'string', 'pattern': '^-?0+' + END}]}
_GIVEN = {'not': {'enum': [None, '']}}


def _mapping_schema() -> dict[str, ty.Any]:
    out = _object(MAPPING, BDM_IGNORED_KEYS)
    out['description'] = ("One block device mapping (Nova's BDM fields). "
                          "Only what Nova writes into a snapshot image "
                          "(nova/compute/api.py snapshot_volume_backed): "
                          'unless no_device, a volume mapping carries its '
                          'snapshot_id; any other is a local disk from '
                          'blank or image naming no Cinder id.')
    # Nova's rule (mappings.mapping_refusal): unless no_device is true...
    out['if'] = _present('no_device', _IS_TRUE)
    out['else'] = {
        'required': ['destination_type'],
        'properties': {'destination_type': {'enum': list(
            DESTINATION_TYPES)}},
        'allOf': [
            {'if': _present('destination_type', {'const': 'volume'}),
             'then': _present('snapshot_id', {'type': 'string',
                                              'pattern': NON_BLANK})},
            {'if': _present('destination_type', {'const': 'local'}),
             'then': {'properties': {
                 'source_type': {'enum': list(LOCAL_SOURCE_TYPES)},
                 'volume_id': {'not': _GIVEN},
                 'snapshot_id': {'not': _GIVEN}}}},
        ],
    }
    return out


#: A mapping that is the root disk (boot_index 0, not no_device).
_ROOT = {'allOf': [_present('boot_index', _IS_ZERO),
                   {'not': _present('no_device', _IS_TRUE)}]}


def schema() -> dict[str, ty.Any]:
    """The request's JSON Schema (2020-12), built from the table."""
    root = _object(REQUEST)
    root['properties']['server'] = {'$ref': '#/$defs/server'}
    root['properties']['requester'] = {
        'description': REQUEST['requester'].description,
        'anyOf': [{'type': 'null'}, {'$ref': '#/$defs/requester'}]}
    # (A listed property escapes additionalProperties: it is a string
    # here too.)
    armed = {name: dict(_string(), **{'not': {'const': value}})
             for name, (value, _what) in deletion.ARMING.items()}
    root['properties']['metadata']['properties'] = armed
    root['properties']['block_device_mappings'] = {
        'description': REQUEST['block_device_mappings'].description,
        'type': 'array',
        'items': {'$ref': '#/$defs/blockDeviceMapping'},
        # One root disk, and it is a volume (the server is volume-backed:
        # Nova's compute_utils.is_volume_backed_instance).
        'contains': _ROOT, 'minContains': 1, 'maxContains': 1,
        'allOf': [{'items': {
            'if': _ROOT,
            'then': _present('destination_type', {'const': 'volume'})}}],
    }
    root['required'] = sorted(set(root['required']) |
                              {'block_device_mappings'})
    server = _object(SERVER)
    server['description'] = ("The server being snapshotted (Nova's "
                             'instance fields).')
    return {
        '$schema': 'https://json-schema.org/draft/2020-12/schema',
        '$id': 'https://opendev.org/nova-snapshot-ext/'
               'snapshot-request.schema.json',
        'title': 'nova-snapshot-ext snapshot request',
        'description': (
            'What a host hands the plugin to register a volume-backed '
            "snapshot image (the CLI's REQUEST.json). Field names are "
            "Nova's (nova.objects.Instance, nova.objects."
            'BlockDeviceMapping). Generated from nova_snapshot_ext/'
            'snapshot/request_rules.py, the rules the validator applies; '
            'patterns use Python re semantics (jsonschema). Checked by '
            'the validator only, as JSON Schema cannot say it: '
            + '; '.join(NOT_IN_SCHEMA) + '.'),
        **root,
        '$defs': {
            'server': server,
            'requester': _object(REQUESTER),
            'blockDeviceMapping': _mapping_schema(),
        },
    }


def schema_text() -> str:
    """The schema file's text (what is shipped, byte for byte)."""
    return json.dumps(schema(), indent=2, ensure_ascii=True) + '\n'


def main() -> int:
    """Print the schema (``python -m ...request_rules > file``)."""
    sys.stdout.write(schema_text())
    return 0


if __name__ == '__main__':  # pragma: no cover
    sys.exit(main())
