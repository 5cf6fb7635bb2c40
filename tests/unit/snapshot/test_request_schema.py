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

import copy
import json
import os

from nova_snapshot_ext.cmd import main as cli
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import request
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
