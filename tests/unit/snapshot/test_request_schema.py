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


"""The request's JSON Schema and ``SnapshotRequest.from_dict`` agree."""

import collections
import copy
import dataclasses
import json
import os
import random

from nova_snapshot_ext.cmd import main as cli
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import request
from nova_snapshot_ext.snapshot import request_rules
from nova_snapshot_ext.snapshot import request_schema
from tests import base


def sample():
    with open(request.SAMPLE_REQUEST, encoding='utf-8') as f:
        return json.load(f)


def changed(path, value, delete=False):
    data = sample()
    node = data
    for part in path[:-1]:
        node = node[part]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


#: Documents both must accept (Nova's records carry these spellings).
VALID = [
    ('sample', sample()),
    ('integer as string', changed(['block_device_mappings', 0,
                                   'volume_size'], '10')),
    ('boolean as string', changed(['block_device_mappings', 0,
                                   'delete_on_termination'], 'yes')),
    ('null optional string', changed(['server', 'user_id'], None)),
    ('null requester', changed(['requester'], None)),
    ('no metadata', changed(['metadata'], None, delete=True)),
    ('null system metadata value', changed(['server', 'system_metadata',
                                            'x'], None)),
    ('db-only keys', changed(['block_device_mappings', 0, 'deleted'],
                             False)),
    ('no_device volume without snapshot', changed(
        ['block_device_mappings', 1], {
            'source_type': 'volume', 'destination_type': 'volume',
            'no_device': True})),
]

#: (kind, document, field path both name).
INVALID = [
    ('unknown top-level field', changed(['bogus'], 1), 'bogus'),
    ('unknown server field', changed(['server', 'flavor'], 'x'),
     'server.flavor'),
    ('unknown mapping field', changed(['block_device_mappings', 2,
                                       'size'], 1),
     'block_device_mappings[2].size'),
    ('name missing', changed(['name'], None, delete=True), 'name'),
    ('name blank', changed(['name'], '   '), 'name'),
    ('name too long', changed(['name'], 'n' * 256), 'name'),
    ('name not a string', changed(['name'], 5), 'name'),
    ('server missing', changed(['server'], None, delete=True), 'server'),
    ('server uuid missing', changed(['server', 'uuid'], None,
                                    delete=True), 'server.uuid'),
    ('project missing', changed(['server', 'project_id'], None,
                                delete=True), 'server.project_id'),
    ('metadata value not a string', changed(['metadata', 'k'], 1),
     'metadata.k'),
    ('mappings not a list', changed(['block_device_mappings'], {}),
     'block_device_mappings'),
    ('bad source_type', changed(['block_device_mappings', 0,
                                 'source_type'], 'disk'),
     'block_device_mappings[0].source_type'),
    ('bad destination_type', changed(['block_device_mappings', 0,
                                      'destination_type'], 'remote'),
     'block_device_mappings[0].destination_type'),
    ('volume without snapshot', changed(['block_device_mappings', 1,
                                         'snapshot_id'], None,
                                        delete=True),
     'block_device_mappings[1].snapshot_id'),
    ('snapshot id blank', changed(['block_device_mappings', 1,
                                   'snapshot_id'], '  '),
     'block_device_mappings[1].snapshot_id'),
    ('image id blank', changed(['block_device_mappings', 2, 'image_id'],
                               ' '),
     'block_device_mappings[2].image_id'),
    ('volume_size negative', changed(['block_device_mappings', 0,
                                      'volume_size'], -1),
     'block_device_mappings[0].volume_size'),
    ('volume_size a list', changed(['block_device_mappings', 0,
                                    'volume_size'], [1]),
     'block_device_mappings[0].volume_size'),
    ('boolean a number', changed(['block_device_mappings', 0,
                                  'delete_on_termination'], 2.5),
     'block_device_mappings[0].delete_on_termination'),
    ('roles not strings', changed(['requester', 'roles'], [1]),
     'requester.roles'),
    ('requester project missing', changed(['requester', 'project_id'],
                                          None, delete=True),
     'requester.project_id'),
    ('not an object', [], '<request>'),
]


class TestSchemaAgreesWithFromDict(base.TestCase):

    def test_schema_is_valid_draft_2020_12(self):
        import jsonschema

        jsonschema.Draft202012Validator.check_schema(request_schema.schema())

    def test_valid_documents(self):
        for kind, data in VALID:
            request.SnapshotRequest.from_dict(copy.deepcopy(data))
            self.assertEqual([], request_schema.errors(data), kind)

    def test_invalid_documents_refused_by_both_naming_the_field(self):
        for kind, data, field in INVALID:
            err = self.assertRaises(exception.InvalidRequest,
                                    request.SnapshotRequest.from_dict,
                                    copy.deepcopy(data))
            self.assertTrue(err.kwargs['field'].startswith(field),
                            (kind, err.kwargs['field']))
            fields = [f for f, _ in request_schema.errors(data)]
            self.assertTrue(any(f.startswith(field) for f in fields),
                            (kind, fields))

    def test_load_keeps_from_dict_wording(self):
        data = changed(['block_device_mappings', 1, 'volume_size'], 'big')
        err = self.assertRaises(exception.InvalidRequest,
                                request_schema.load, data)
        self.assertEqual('block_device_mappings[1].volume_size',
                         err.kwargs['field'])
        self.assertIn('must be an integer', err.format_message())

    def test_check_names_the_field_and_the_schema(self):
        err = self.assertRaises(exception.InvalidRequest,
                                request_schema.check,
                                changed(['server', 'flavor'], 'x'))
        self.assertEqual('server.flavor', err.kwargs['field'])
        self.assertIn('snapshot-request.schema.json', err.format_message())

    def test_help_points_to_the_schema(self):
        self.assertTrue(os.path.isfile(cli.REQUEST_SCHEMA))
        self.assertEqual(request_schema.SCHEMA_PATH, cli.REQUEST_SCHEMA)


class TestOneSourceOfTruth(base.TestCase):
    """Issue 28 item 3: the schema is generated from the validator's table.

    The shipped file is that output; the two agree on thousands of
    generated requests (seeded), covering every field, type and edge.
    """

    def test_shipped_file_is_the_generated_schema(self):
        with open(request_schema.SCHEMA_PATH, encoding='utf-8') as f:
            shipped = f.read()
        self.assertEqual(request_rules.schema_text(), shipped,
                         'regenerate it: python -m nova_snapshot_ext.'
                         'snapshot.request_rules > %s'
                         % request_schema.SCHEMA_PATH)

    def test_table_names_every_field_of_the_dataclasses(self):
        for table, cls in ((request_rules.REQUEST, request.SnapshotRequest),
                           (request_rules.SERVER, request.Server),
                           (request_rules.REQUESTER, request.Requester),
                           (request_rules.MAPPING,
                            request.BlockDeviceMapping)):
            self.assertEqual(sorted(f.name for f in dataclasses.fields(cls)),
                             sorted(table), cls.__name__)

    #: The issue's inputs (both must give the same answer; 20.0 is an
    #: integer to JSON Schema, and so to the validator).
    ISSUE = [
        (['block_device_mappings', 0, 'volume_size'], 'big', False),
        (['block_device_mappings', 0, 'volume_size'], '-5', False),
        (['block_device_mappings', 0, 'volume_size'], 20.0, True),
        (['block_device_mappings', 0, 'volume_size'], 20.5, False),
        (['block_device_mappings', 0, 'boot_index'], 'x', False),
        (['block_device_mappings', 0, 'encrypted'], 'maybe', False),
        (['block_device_mappings', 1, 'no_device'], 'False', True),
    ]

    def test_issue_inputs(self):
        for path, value, accepted in self.ISSUE:
            data = changed(path, value)
            if path[-1] == 'no_device':
                del data['block_device_mappings'][1]['snapshot_id']
                accepted = False
            self.assertEqual((accepted, accepted),
                             (_validator_accepts(data)[0],
                              _schema_accepts(data)), (path, value))

    def test_thousands_of_generated_requests_agree(self):
        rng = random.Random(28)
        seen = collections.Counter()
        for number in range(4000):
            data = _generate(rng)
            accepted, err = _validator_accepts(copy.deepcopy(data))
            by_schema = _schema_accepts(data)
            seen[(accepted, by_schema)] += 1
            if accepted == by_schema:
                continue
            # The only disagreement allowed: a rule JSON Schema cannot
            # say (a name given twice), refused by the validator alone.
            self.assertFalse(accepted, (number, data,
                                        request_schema.errors(data)))
            self.assertIn('is already the', err.kwargs.get('reason', ''),
                          (number, data, err.format_message()))
            seen['validator only: named twice'] += 1
        # Both answers came often: the generator covers both sides.
        self.assertGreater(seen[(True, True)], 600, seen)
        self.assertGreater(seen[(False, False)], 1500, seen)


def _validator_accepts(data):
    try:
        request.SnapshotRequest.from_dict(data)
    except (exception.InvalidRequest, exception.InvalidServerState) as err:
        return False, err
    return True, None


def _schema_accepts(data):
    return not request_schema.errors(data)


U = '6e2b6c1e-8f4a-4a51-9c3e-2f1d0b7a9c11'
#: Edge values of every kind, valid ones among them.
TEXT = [None, '', ' ', '\n', '\t x', 'x', 'x\n', 'é', 'x' * 255, 'x' * 256,
        '\ud800', 'a\udfffb', 5, 5.0, True, [], {}]
INTS = [None, 0, 1, -1, 10, 20.0, 20.5, -5, 2 ** 40, 1e20, float('inf'),
        float('nan'), '10', '-5', '0', '-0', '00', ' 5', '+5', '5_0',
        '\u0665', 'big', 'x', '', '5\n', True, False, [], {}]
BOOLS = [None, True, False, 'yes', 'no', 'True', 'False', ' TRUE ', 'On',
         'off', 'y', 'N', 't', 'F', '1', '0', 'maybe', '', 'yes\n', 'truthy',
         1, 0, 2.5, [], {}]
IDS = [None, '', ' ', '\n', 'S1', U, U.upper(), '\ud800', 5, 'x' * 300]
UUIDS = [U, U.upper(), U.replace('-', ''), '{%s}' % U, 'urn:uuid:' + U,
         '{' + U, U + '\n', ' ' + U, U[:-1], 'abc', '', None, 5,
         'urn:uuid:{%s}' % U]
MAPS = [None, {}, {'k': 'v'}, {'k': None}, {'k': 1}, {'\ud800': 'v'},
        {'k': '\ud800'}, [], 'x',
        {'cinder_encryption_key_deletion_policy': 'on_image_deletion'},
        {'cinder_encryption_key_deletion_policy': 'do_not_delete',
         'cinder_encryption_key_id': U},
        {'cinder_encryption_key_deletion_policy': 5},
        {'cinder_encryption_key_deletion_policy': None},
        {'cinder_encryption_key_deletion_policy': '\ud800'}]
LISTS = [None, [], ['member'], [1], 'x', '', 0, ['\ud800'], {}, [None]]
POOLS = {'text': TEXT, 'id': IDS, 'uuid': UUIDS, 'integer': INTS,
         'boolean': BOOLS, 'map': MAPS, 'list': LISTS}


def _pool(field):
    if field.kind == 'enum':
        return list(field.choices) + [None, '', 'Volume', 'disk', 5]
    if field.kind == 'text' and field.choices:
        return list(field.choices) + [None, '', 'error', 'ACTIVE', 5]
    return POOLS[field.kind]


def _mapping(rng):
    """A random mapping, mostly of the shapes Nova writes."""
    shape = rng.choice([
        {'source_type': 'volume', 'destination_type': 'volume'},
        {'source_type': 'image', 'destination_type': 'volume'},
        {'source_type': 'blank', 'destination_type': 'local',
         'guest_format': 'swap'},
        {'source_type': 'image', 'destination_type': 'local'},
        {'source_type': 'volume'},
        {'source_type': rng.choice(request_rules.SOURCE_TYPES),
         'destination_type': rng.choice(['volume', 'local', None])},
    ])
    bdm = dict(shape)
    if bdm.get('destination_type') == 'volume' or rng.random() < .2:
        bdm['snapshot_id'] = rng.choice(['S1', 'S2', 'S3', U, U.upper(),
                                         'S4', 'S5', None, ''])
    if rng.random() < .5:
        bdm['volume_id'] = rng.choice(['V1', 'V2', 'V3', 'V4', None, ''])
    bdm['boot_index'] = rng.choice([0, -1, None, '0', 1, '-0', -1, None])
    bdm['device_name'] = rng.choice(['/dev/vda', '/dev/vdb', 'vdc',
                                     '/dev/vdd', 'vde', None, 'vdf'])
    if rng.random() < .15:
        bdm['no_device'] = rng.choice(BOOLS)
    if rng.random() < .3:
        bdm['volume_size'] = rng.choice([1, 10, '20', 0])
    return bdm


def _generate(rng):
    """One request: the sample, or random mappings, then mutations."""
    data = sample()
    if rng.random() < .35:
        # Random mappings: roots, volume-backedness, shapes, names.
        data['block_device_mappings'] = [
            _mapping(rng) for _ in range(rng.randint(0, 4))]
    for _ in range(rng.choice([0, 0, 1, 1, 1, 2, 3])):
        target = rng.random()
        mappings = data.get('block_device_mappings')
        if target < .45 and isinstance(mappings, list) and mappings:
            node = rng.choice(mappings)
            table = request_rules.MAPPING
        elif target < .65:
            node, table = data['server'], request_rules.SERVER
        elif target < .75 and isinstance(data.get('requester'), dict):
            node, table = data['requester'], request_rules.REQUESTER
        else:
            node = data
            table = {k: f for k, f in request_rules.REQUEST.items()
                     if f.kind not in ('object', 'mappings')}
        name = rng.choice(sorted(table))
        action = rng.random()
        if action < .08:
            node.pop(name, None)
        elif action < .1:
            node['unknown_%d' % rng.randint(0, 9)] = 'x'
        elif action < .12 and table is request_rules.MAPPING:
            # Nova's database-only keys: ignored, whatever they hold.
            node[rng.choice(request_rules.BDM_IGNORED_KEYS)] = rng.choice(
                TEXT + INTS[:5])
        else:
            node[name] = copy.deepcopy(rng.choice(_pool(table[name])))
    if rng.random() < .03:
        data['requester'] = rng.choice([None, {}, 'x', {'project_id': 'p'}])
    if rng.random() < .03:
        data['block_device_mappings'] = rng.choice([None, {}, 'x', []])
    if rng.random() < .02 and isinstance(data.get('block_device_mappings'),
                                         list):
        data['block_device_mappings'].append(rng.choice([None, 5, [], 'x']))
    if rng.random() < .02:
        data['server'] = rng.choice([None, 'x', {}])
    return data
