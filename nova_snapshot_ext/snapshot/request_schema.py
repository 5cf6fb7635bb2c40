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


"""The snapshot request's JSON Schema, and checking a document against it.

The schema (:data:`SCHEMA_PATH`, JSON Schema 2020-12, shipped in the
package) describes the JSON form of
:class:`~nova_snapshot_ext.snapshot.request.SnapshotRequest` for people
and other tools; ``doc/source/request.rst`` is its reference page.  It is
generated from the table the validator reads
(:mod:`~nova_snapshot_ext.snapshot.request_rules`), so both accept the
same requests (``tests/unit/snapshot/test_request_schema.py`` runs
thousands of generated requests through both); the only rules it cannot
express (each device name, volume and volume snapshot named once, in any
spelling) stay in :mod:`~nova_snapshot_ext.snapshot.request` and the
schema's description says so.

:func:`load` builds a request from a JSON document with both: where both
refuse, the error is ``from_dict``'s (the wording operators already
know); where only the schema refuses, the schema's, naming the field the
same way (``block_device_mappings[1].snapshot_id``).
"""

from __future__ import annotations

import functools
import json
import os
import typing as ty

import jsonschema

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import request_rules

#: The schema file (installed with the package).
SCHEMA_PATH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'data',
    'snapshot-request.schema.json')


@functools.lru_cache(maxsize=1)
def schema() -> dict[str, ty.Any]:
    """The schema as a dict, built from the rules table (once).

    The shipped file holds the same text
    (:func:`~nova_snapshot_ext.snapshot.request_rules.schema_text`).
    """
    return request_rules.schema()


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema())


def field_path(path: ty.Iterable[ty.Any]) -> str:
    """``['block_device_mappings', 1, 'x']`` -> ``block_device_mappings[1].x``.

    The empty path is ``<request>``, as ``from_dict`` names the document.
    """
    text = ''
    for part in path:
        if isinstance(part, int):
            text += '[%d]' % part
        else:
            text += ('.' if text else '') + str(part)
    return text or '<request>'


def _leaves(err: jsonschema.ValidationError
            ) -> ty.Iterator[jsonschema.ValidationError]:
    if not err.context:
        yield err
    for sub in err.context:
        yield from _leaves(sub)


def _deepest(err: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """The error of an ``anyOf`` that names the deepest field.

    (``requester.roles``, not ``requester``.)
    """
    if not err.context:
        return err
    # The deepest; at one depth, not "is not of type 'null'".
    return max(_leaves(err), key=lambda e: (len(e.absolute_path),
                                            e.validator != 'type'))


def errors(data: ty.Any) -> list[tuple[str, str]]:
    """Every schema violation of ``data`` as ``(field path, reason)``.

    Sorted by field path; ``[]`` when the document conforms.
    """
    found = []
    for err in map(_deepest, _validator().iter_errors(data)):
        path = list(err.absolute_path)
        if err.validator == 'required' and isinstance(err.instance, dict):
            missing = [name for name in err.validator_value
                       if name not in err.instance]
            path += missing[:1]
            found.append((field_path(path), 'is required'))
        elif (err.validator == 'additionalProperties' and
              isinstance(err.instance, dict)):
            known = sorted(err.schema.get('properties', {}))
            unknown = sorted(set(err.instance) - set(known))
            found.append((field_path(path + unknown[:1]),
                          'is not a known field (known: %s)'
                          % ', '.join(known)))
        else:
            found.append((field_path(path), err.message))
    return sorted(found)


def check(data: ty.Any) -> None:
    """Refuse a document the schema refuses.

    :raises InvalidRequest: naming the first field (by path) at fault.
    """
    found = errors(data)
    if found:
        field, reason = found[0]
        raise exception.InvalidRequest(
            field=field, reason='%s (%s)' % (reason, os.path.basename(
                SCHEMA_PATH)))


def load_file(path: str) -> request_mod.SnapshotRequest:
    """Read a request file with ``from_file``, then check its schema.

    :meth:`SnapshotRequest.from_file
    <nova_snapshot_ext.snapshot.request.SnapshotRequest.from_file>` first
    (its errors, unchanged), then :func:`check` on the same document.

    :raises InvalidRequest: naming the offending field (``<file>`` when
        the file cannot be read or is not JSON).
    :raises InvalidServerState: as ``from_dict``.
    """
    request = request_mod.SnapshotRequest.from_file(path)
    try:
        with open(path, encoding='utf-8') as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError) as err:
        raise exception.InvalidRequest(field='<file>', reason=str(err))
    check(data)
    return request


def load(data: ty.Any) -> request_mod.SnapshotRequest:
    """Build a request from a JSON document checked by both validators.

    :raises InvalidRequest: naming the offending field.
    :raises InvalidServerState: as :meth:`SnapshotRequest.from_dict`.
    """
    request = request_mod.SnapshotRequest.from_dict(data)
    check(data)
    return request
