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

from unittest import mock

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import request
from tests import base


class TestSnapshotRequest(base.TestCase):

    def _parse(self, data):
        return request.SnapshotRequest.from_dict(data)

    def assertFieldError(self, data, field, exc=exception.InvalidRequest):
        err = self.assertRaises(exc, self._parse, data)
        if field is not None:
            self.assertEqual(field, err.kwargs['field'])
            self.assertIn(field, err.format_message())
        return err

    def test_sample_parses(self):
        req = self._parse(base.sample_request_dict())
        self.assertEqual('demo-snapshot-of-db01', req.name)
        self.assertEqual(3, len(req.block_device_mappings))
        self.assertTrue(req.is_volume_backed())
        self.assertEqual(['member', 'reader'], req.requester.roles)

    def test_db_only_bdm_keys_ignored(self):
        req = self._parse(base.sample_request_dict())
        self.assertFalse(hasattr(req.block_device_mappings[0],
                                 'connection_info'))

    def test_missing_name(self):
        data = base.sample_request_dict()
        del data['name']
        self.assertFieldError(data, 'name')

    def test_name_too_long(self):
        data = base.sample_request_dict()
        data['name'] = 'x' * 256
        self.assertFieldError(data, 'name')

    def test_not_an_object(self):
        self.assertFieldError(['x'], '<request>')

    def test_unknown_top_level_field(self):
        data = base.sample_request_dict()
        data['nmae'] = 'typo'
        self.assertFieldError(data, 'nmae')

    def test_server_uuid_must_be_uuid(self):
        data = base.sample_request_dict()
        data['server']['uuid'] = 'not-a-uuid'
        self.assertFieldError(data, 'server.uuid')

    def test_server_project_required(self):
        data = base.sample_request_dict()
        del data['server']['project_id']
        self.assertFieldError(data, 'server.project_id')

    def test_system_metadata_values_must_be_strings(self):
        data = base.sample_request_dict()
        data['server']['system_metadata']['image_min_ram'] = 512
        self.assertFieldError(data, 'server.system_metadata.image_min_ram')

    def test_bdm_bad_source_type(self):
        data = base.sample_request_dict()
        data['block_device_mappings'][1]['source_type'] = 'floppy'
        self.assertFieldError(data, 'block_device_mappings[1].source_type')

    def test_bdm_volume_size_must_be_int(self):
        data = base.sample_request_dict()
        data['block_device_mappings'][0]['volume_size'] = 'ten'
        self.assertFieldError(data, 'block_device_mappings[0].volume_size')

    def test_bdm_boolean_strings_accepted(self):
        data = base.sample_request_dict()
        data['block_device_mappings'][1]['delete_on_termination'] = 'true'
        req = self._parse(data)
        self.assertTrue(req.block_device_mappings[1].delete_on_termination)

    def test_bdm_bad_boolean(self):
        data = base.sample_request_dict()
        data['block_device_mappings'][1]['delete_on_termination'] = 'maybe'
        self.assertFieldError(
            data, 'block_device_mappings[1].delete_on_termination')

    def test_volume_bdm_needs_snapshot_id(self):
        data = base.sample_request_dict()
        del data['block_device_mappings'][1]['snapshot_id']
        self.assertFieldError(data, 'block_device_mappings[1].snapshot_id')

    def test_blank_ids_are_refused(self):
        # Blanks alone name no snapshot, volume or image: stripped to the
        # one spelling of an id they would be stored empty (an active
        # image that cannot boot).
        for field in ('snapshot_id', 'volume_id', 'image_id',
                      'encryption_secret_uuid'):
            for blank in (' ', '\t', '  \n '):
                with self.subTest(field=field, blank=blank):
                    data = base.sample_request_dict()
                    data['block_device_mappings'][1][field] = blank
                    err = self.assertFieldError(
                        data, 'block_device_mappings[1].%s' % field)
                    self.assertIn('blank', err.format_message())

    def test_blank_snapshot_id_of_a_request_built_in_python(self):
        req = self._parse(base.sample_request_dict())
        req.block_device_mappings[1].snapshot_id = '   '
        err = self.assertRaises(exception.InvalidRequest, req.validate)
        self.assertEqual('block_device_mappings[1].snapshot_id',
                         err.kwargs['field'])

    def test_unknown_bdm_field(self):
        data = base.sample_request_dict()
        data['block_device_mappings'][2]['virtual_nam'] = 'swap'
        self.assertFieldError(data, 'block_device_mappings[2].virtual_nam')

    def test_two_roots_refused(self):
        data = base.sample_request_dict()
        data['block_device_mappings'][1]['boot_index'] = 0
        self.assertFieldError(data, 'block_device_mappings[1].boot_index')

    def test_image_backed_server_refused(self):
        # E18: image root with a data volume is not volume-backed.
        data = base.sample_request_dict()
        data['server']['image_ref'] = 'a7b0c1d2-0000-4000-8000-000000000001'
        data['block_device_mappings'][0].update(
            source_type='image', destination_type='local',
            image_id=data['server']['image_ref'])
        data['block_device_mappings'][0].pop('snapshot_id')
        data['block_device_mappings'][0].pop('volume_id')
        self.assertFieldError(data, 'block_device_mappings')

    def test_image_to_volume_root_is_volume_backed(self):
        # E18: imageRef set but root is image->volume: volume-backed.
        data = base.sample_request_dict()
        data['server']['image_ref'] = 'a7b0c1d2-0000-4000-8000-000000000001'
        data['block_device_mappings'][0]['source_type'] = 'image'
        self.assertTrue(self._parse(data).is_volume_backed())

    def test_no_root_mapping_no_image_ref_is_volume_backed(self):
        # Nova's legacy rule decides volume-backed; the image still could
        # not boot without a boot_index 0 entry, so it is refused.
        req = self._parse(base.sample_request_dict())
        req.block_device_mappings[0].boot_index = None
        self.assertTrue(req.is_volume_backed())
        for index in (None, 1, -1):
            data = base.sample_request_dict()
            data['block_device_mappings'][0]['boot_index'] = index
            err = self.assertFieldError(data, 'block_device_mappings')
            self.assertIn('boot_index 0', err.format_message())

    def test_no_root_mapping_with_image_ref_is_not(self):
        data = base.sample_request_dict()
        data['block_device_mappings'][0]['boot_index'] = None
        data['server']['image_ref'] = 'a7b0c1d2-0000-4000-8000-000000000001'
        self.assertFieldError(data, 'block_device_mappings')

    def test_snapshot_states(self):
        # E17: active, stopped, paused, suspended accepted.
        for state in request.SNAPSHOT_VM_STATES:
            data = base.sample_request_dict()
            data['server']['vm_state'] = state
            self.assertEqual(state, self._parse(data).server.vm_state)

    def test_refused_states(self):
        for state in ('error', 'shelved_offloaded', 'building'):
            data = base.sample_request_dict()
            data['server']['vm_state'] = state
            err = self.assertFieldError(data, None,
                                        exception.InvalidServerState)
            self.assertIn(state, err.format_message())
            self.assertEqual(409, err.code)

    def test_requester_defaults_to_server_owner(self):
        data = base.sample_request_dict()
        del data['requester']
        req = self._parse(data)
        self.assertEqual(req.server.project_id, req.requester.project_id)

    def test_requester_roles_must_be_list(self):
        data = base.sample_request_dict()
        data['requester']['roles'] = 'admin'
        self.assertFieldError(data, 'requester.roles')

    def test_image_id_must_be_uuid(self):
        data = base.sample_request_dict()
        data['image_id'] = '123'
        self.assertFieldError(data, 'image_id')

    def test_image_id_has_one_spelling(self):
        # Glance stores an id as sent: every spelling of one UUID must
        # name one image, or a retry would make a second.
        canonical = 'c13f4845-7a2b-4c3d-9e8f-0a1b2c3d4e5f'
        for spelling in (canonical.upper(), canonical.replace('-', ''),
                         '{%s}' % canonical, 'urn:uuid:' + canonical):
            data = base.sample_request_dict()
            data['image_id'] = spelling
            self.assertEqual(canonical, self._parse(data).image_id)

    def test_no_volume_mapping_refused(self):
        # Nothing to point at and nothing to recognise a retry by.
        for keep in ([], [2]):
            data = base.sample_request_dict()
            data['block_device_mappings'] = [
                data['block_device_mappings'][i] for i in keep]
            self.assertFieldError(data, 'block_device_mappings')

    def test_metadata_values_must_be_strings(self):
        data = base.sample_request_dict()
        data['metadata'] = {'count': 3}
        self.assertFieldError(data, 'metadata.count')

    def test_round_trip(self):
        req = self._parse(base.sample_request_dict())
        again = request.SnapshotRequest.from_dict(req.to_dict())
        self.assertEqual(req, again)

    def test_lone_surrogate_refused(self):
        data = base.sample_request_dict()
        data['name'] = 'bad \ud800'
        self.assertFieldError(data, 'name')
        data = base.sample_request_dict()
        data['metadata'] = {'k': 'v\udfff'}
        self.assertFieldError(data, 'metadata.k')

    def test_min_ram_beyond_glance_integer(self):
        from nova_snapshot_ext.snapshot import metadata
        data = base.sample_request_dict()
        data['server']['system_metadata']['image_min_ram'] = str(2 ** 31)
        req = self._parse(data)
        err = self.assertRaises(exception.InvalidRequest,
                                metadata.build_image_record, req)
        self.assertEqual('server.system_metadata.image_min_ram',
                         err.kwargs['field'])


class TestSameIdTwice(base.TestCase):
    """Kind: one Cinder snapshot or volume named by two mappings."""

    _parse = TestSnapshotRequest._parse
    assertFieldError = TestSnapshotRequest.assertFieldError

    def test_same_snapshot_id_in_any_spelling(self):
        first = base.sample_request_dict()['block_device_mappings'][0][
            'snapshot_id']
        for spelling in (first, first.upper(), ' %s ' % first,
                         first.replace('-', ''), '{%s}' % first,
                         'urn:uuid:%s' % first):
            with self.subTest(spelling=spelling):
                data = base.sample_request_dict()
                data['block_device_mappings'][1]['snapshot_id'] = spelling
                err = self.assertFieldError(
                    data, 'block_device_mappings[1].snapshot_id')
                self.assertIn('already the snapshot of mapping 0',
                              err.format_message())

    def test_same_volume_id_in_any_spelling(self):
        first = base.sample_request_dict()['block_device_mappings'][0][
            'volume_id']
        for spelling in (first, first.upper(), 'urn:uuid:%s' % first,
                         first.replace('-', '')):
            with self.subTest(spelling=spelling):
                data = base.sample_request_dict()
                data['block_device_mappings'][1]['volume_id'] = spelling
                err = self.assertFieldError(
                    data, 'block_device_mappings[1].volume_id')
                self.assertIn('already the volume of mapping 0',
                              err.format_message())

    def test_distinct_ids_parse(self):
        self.assertEqual(3, len(self._parse(
            base.sample_request_dict()).block_device_mappings))


class TestCinderId(base.TestCase):

    def test_uuid_spellings_are_one(self):
        canonical = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c01'
        for spelling in (canonical, canonical.upper(), ' %s\t' % canonical,
                         canonical.replace('-', ''), '{%s}' % canonical,
                         'urn:uuid:%s' % canonical.upper()):
            self.assertEqual(canonical, request.cinder_id(spelling))

    def test_other_ids_only_lose_blanks(self):
        self.assertEqual('snap-1', request.cinder_id(' snap-1 '))
        self.assertEqual('Snap-1', request.cinder_id('Snap-1'))
        self.assertIsNone(request.cinder_id(None))
        self.assertEqual('', request.cinder_id(''))


class TestBackupType(base.TestCase):

    def test_absent_is_a_snapshot(self):
        req = request.SnapshotRequest.from_dict(base.sample_request_dict())
        self.assertIsNone(req.backup_type)

    def test_backup_type(self):
        data = base.sample_request_dict()
        data['backup_type'] = 'daily'
        req = request.SnapshotRequest.from_dict(data)
        self.assertEqual('daily', req.backup_type)
        self.assertEqual('daily', req.to_dict()['backup_type'])

    def test_bad_backup_type(self):
        for value in ('', '  ', 5):
            data = base.sample_request_dict()
            data['backup_type'] = value
            err = self.assertRaises(exception.InvalidRequest,
                                    request.SnapshotRequest.from_dict, data)
            self.assertEqual('backup_type', err.kwargs['field'])


def _direct_request(**changes):
    """The sample request built from the dataclasses, as a Python host may.

    ``changes`` maps a dotted path (``name``, ``metadata``,
    ``server.uuid``, ``bdm0.volume_size``) to the value to put there.
    """
    parsed = request.SnapshotRequest.from_dict(base.sample_request_dict())
    req = request.SnapshotRequest(
        name=parsed.name,
        server=request.Server(**vars(parsed.server)),
        block_device_mappings=[request.BlockDeviceMapping(**vars(b))
                               for b in parsed.block_device_mappings],
        requester=request.Requester(**vars(parsed.requester)),
        metadata=dict(parsed.metadata), image_id=parsed.image_id,
        backup_type=parsed.backup_type)
    for path, value in changes.items():
        target, _, attr = path.rpartition('.')
        obj = {'': req, 'server': req.server, 'requester': req.requester,
               'bdm0': req.block_device_mappings[0]}[target]
        setattr(obj, attr, value)
    return req


class TestDirectlyBuiltRequest(base.TestCase):
    """A request built from the dataclasses gets from_dict's field checks."""

    def assertFieldError(self, field, **changes):
        req = _direct_request(**changes)
        err = self.assertRaises(exception.InvalidRequest, req.validate)
        self.assertEqual(field, err.kwargs['field'])
        self.assertIn(field, err.format_message())

    def test_valid_direct_request_passes(self):
        req = _direct_request()
        req.validate()
        self.assertEqual(
            request.SnapshotRequest.from_dict(
                base.sample_request_dict()).to_dict(), req.to_dict())

    def test_each_kind_of_bad_field_is_named(self):
        cases = [
            ('name', {'name': ''}),
            ('name', {'name': 'x' * 256}),
            ('name', {'name': None}),
            ('metadata', {'metadata': {1: 'x'}}),
            ('metadata.tier', {'metadata': {'tier': 5}}),
            ('metadata', {'metadata': ['tier']}),
            ('image_id', {'image_id': 'not-a-uuid'}),
            ('backup_type', {'backup_type': ' '}),
            ('server.uuid', {'server.uuid': 'nope'}),
            ('server.project_id', {'server.project_id': None}),
            ('server.system_metadata.image_min_ram',
             {'server.system_metadata': {'image_min_ram': 512}}),
            ('requester.roles', {'requester.roles': 'admin'}),
            ('block_device_mappings[0].volume_size',
             {'bdm0.volume_size': -1}),
            ('block_device_mappings[0].snapshot_id',
             {'bdm0.snapshot_id': None}),
            ('block_device_mappings[0].source_type',
             {'bdm0.source_type': 'disk'}),
            ('block_device_mappings[0].boot_index',
             {'bdm0.boot_index': 'first'}),
            ('block_device_mappings[0].delete_on_termination',
             {'bdm0.delete_on_termination': 'perhaps'}),
        ]
        for field, changes in cases:
            with self.subTest(field=field, changes=changes):
                self.assertFieldError(field, **changes)

    def test_wrong_part_types_are_named(self):
        for field, changes in [('server', {'server': {'uuid': 'x'}}),
                               ('requester', {'requester': 'me'}),
                               ('block_device_mappings',
                                {'block_device_mappings': ()}),
                               ('block_device_mappings[0]',
                                {'block_device_mappings': [{}]})]:
            with self.subTest(field=field):
                self.assertFieldError(field, **changes)

    def test_direct_request_is_normalised_like_from_dict(self):
        image_id = '9F0C2A5E-7D3B-4C1A-8E6F-0123456789AB'
        req = _direct_request(**{'image_id': image_id,
                                 'bdm0.volume_size': '10'})
        req.validate()
        self.assertEqual(image_id.lower(), req.image_id)
        self.assertEqual(10, req.block_device_mappings[0].volume_size)

    def test_two_volume_mappings_with_one_snapshot_refused(self):
        data = base.sample_request_dict()
        volumes = [i for i, b in enumerate(data['block_device_mappings'])
                   if b.get('destination_type') == 'volume']
        self.assertGreaterEqual(len(volumes), 2)
        first, second = volumes[:2]
        bdms = data['block_device_mappings']
        bdms[second]['snapshot_id'] = bdms[first]['snapshot_id']
        err = self.assertRaises(exception.InvalidRequest,
                                request.SnapshotRequest.from_dict, data)
        self.assertEqual('block_device_mappings[%d].snapshot_id' % second,
                         err.kwargs['field'])

    def test_from_dict_checks_fields_once(self):
        with mock.patch.object(request.SnapshotRequest, '_build',
                               wraps=request.SnapshotRequest._build) as build:
            request.SnapshotRequest.from_dict(base.sample_request_dict())
        self.assertEqual(1, build.call_count)

    def test_unchanged_request_is_checked_once(self):
        # from_dict checked every field; validate on the unchanged request
        # (every entry point calls it) does not build it again, nor does a
        # second validate.
        req = request.SnapshotRequest.from_dict(base.sample_request_dict())
        with mock.patch.object(request.SnapshotRequest, '_build',
                               wraps=request.SnapshotRequest._build) as build:
            req.validate()
            req.validate()
        self.assertEqual(0, build.call_count)
        direct = _direct_request()
        with mock.patch.object(request.SnapshotRequest, '_build',
                               wraps=request.SnapshotRequest._build) as build:
            direct.validate()
            direct.validate()
        self.assertEqual(1, build.call_count)

    def test_changes_of_each_kind_after_a_check_are_checked(self):
        # Equal-comparing values of another type, containers changed in
        # place, mappings added or removed: each is checked again.
        cases = [
            ('block_device_mappings[0].boot_index',
             lambda q: setattr(q.block_device_mappings[0], 'boot_index',
                               False)),
            ('block_device_mappings[0].delete_on_termination',
             lambda q: setattr(q.block_device_mappings[0],
                               'delete_on_termination', 0)),
            ('server.system_metadata.image_min_ram',
             lambda q: q.server.system_metadata.update(image_min_ram=1)),
            ('requester.roles', lambda q: q.requester.roles.append(7)),
            # A container where a mapping holds only scalars.
            ('block_device_mappings[0].tag',
             lambda q: setattr(q.block_device_mappings[0], 'tag', ['x'])),
            ('block_device_mappings[1].volume_size',
             lambda q: setattr(q.block_device_mappings[1], 'volume_size',
                               {'GiB': 1})),
            ('block_device_mappings[%d]' % len(
                base.sample_request_dict()['block_device_mappings']),
             lambda q: q.block_device_mappings.append('vda')),
        ]
        for field, change in cases:
            req = request.SnapshotRequest.from_dict(
                base.sample_request_dict())
            req.validate()
            change(req)
            err = self.assertRaises(exception.InvalidRequest, req.validate)
            self.assertEqual(field, err.kwargs['field'])
        req = request.SnapshotRequest.from_dict(base.sample_request_dict())
        req.block_device_mappings.pop()
        with mock.patch.object(request.SnapshotRequest, '_build',
                               wraps=request.SnapshotRequest._build) as build:
            req.validate()
        self.assertEqual(1, build.call_count)

    def test_rules_checked_once_and_a_failure_every_time(self):
        req = request.SnapshotRequest.from_dict(base.sample_request_dict())
        with mock.patch.object(request.SnapshotRequest, '_check_rules',
                               wraps=req._check_rules) as rules:
            req.validate()
            req.validate()
        # Passed in from_dict, unchanged since: not checked again.
        self.assertEqual(0, rules.call_count)
        # Broken after from_dict: refused, and again on the next call (a
        # failed check is never remembered as passed).
        req.server.vm_state = 'building'
        for _ in range(2):
            self.assertRaises(exception.InvalidServerState, req.validate)
        req.block_device_mappings[1].boot_index = 0
        req.server.vm_state = 'active'
        for _ in range(2):
            err = self.assertRaises(exception.InvalidRequest, req.validate)
            self.assertEqual('block_device_mappings[1].boot_index',
                             err.kwargs['field'])

    def test_request_changed_after_from_dict_is_checked_again(self):
        # A host builds the request once, then fills in the volume
        # snapshot ids (or a name): validate (every entry point) checks
        # the request as it is now, not as from_dict saw it.
        cases = [
            ('block_device_mappings[0].snapshot_id',
             lambda q: setattr(q.block_device_mappings[0], 'snapshot_id',
                               None)),
            ('name', lambda q: setattr(q, 'name', 123)),
            ('metadata.tier', lambda q: q.metadata.update(tier=5)),
            ('server.uuid', lambda q: setattr(q.server, 'uuid', 'nope')),
        ]
        for field, change in cases:
            req = request.SnapshotRequest.from_dict(
                base.sample_request_dict())
            self.assertTrue(req.block_device_mappings[0].is_volume)
            change(req)
            err = self.assertRaises(exception.InvalidRequest, req.validate)
            self.assertEqual(field, err.kwargs['field'])


class TestSameDeviceNameTwice(base.TestCase):
    """Kind: two mappings of one device, in any spelling Nova makes one."""

    _parse = TestSnapshotRequest._parse
    assertFieldError = TestSnapshotRequest.assertFieldError

    def test_same_device_in_any_spelling(self):
        # The sample's root mapping is 'vda'; mapping 1 is '/dev/vdb'.
        for first, second in (('vda', 'vda'), ('vda', '/dev/vda'),
                              ('/dev/vda', 'vda'), ('/dev/vda', '/dev/vda'),
                              ('/dev/vda', ' /dev/vda')):
            with self.subTest(first=first, second=second):
                data = base.sample_request_dict()
                data['block_device_mappings'][0]['device_name'] = first
                data['block_device_mappings'][1]['device_name'] = second
                err = self.assertFieldError(
                    data, 'block_device_mappings[1].device_name')
                self.assertIn('block_device_mappings[0].device_name',
                              err.format_message())

    def test_local_mapping_colliding_with_a_later_one(self):
        # Not only the root: the swap disk (mapping 2) and mapping 1.
        data = base.sample_request_dict()
        data['block_device_mappings'][2]['device_name'] = 'vdb'
        err = self.assertFieldError(
            data, 'block_device_mappings[2].device_name')
        self.assertIn('block_device_mappings[1].device_name',
                      err.format_message())

    def test_built_in_python_is_refused_by_validate(self):
        req = self._parse(base.sample_request_dict())
        req.block_device_mappings[2].device_name = '/dev/vda'
        err = self.assertRaises(exception.InvalidRequest, req.validate)
        self.assertEqual('block_device_mappings[2].device_name',
                         err.kwargs['field'])
        self.assertIn('block_device_mappings[0].device_name',
                      err.format_message())

    def test_no_device_mapping_takes_no_name(self):
        # Nova leaves no_device mappings out of the names in use: a
        # no_device mapping of a name suppresses a device, attaches none.
        data = base.sample_request_dict()
        data['block_device_mappings'].append(
            {'source_type': 'blank', 'destination_type': 'local',
             'device_name': '/dev/vdb', 'no_device': True})
        self.assertEqual(4, len(self._parse(data).block_device_mappings))

    def test_unnamed_mappings_do_not_collide(self):
        data = base.sample_request_dict()
        for bdm in data['block_device_mappings'][1:]:
            bdm['device_name'] = None
        self.assertEqual(3, len(self._parse(data).block_device_mappings))

    def test_other_names_and_case_are_other_devices(self):
        data = base.sample_request_dict()
        data['block_device_mappings'][1]['device_name'] = '/dev/vdA'
        data['block_device_mappings'][2]['device_name'] = 'dev/vda'
        self.assertEqual(3, len(self._parse(data).block_device_mappings))

    def test_cli_refuses_it_before_glance_with_exit_2(self):
        import io
        import json
        import os

        import fixtures

        from nova_snapshot_ext.cmd import main

        tmp = self.useFixture(fixtures.TempDir()).path
        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        conf = os.path.join(tmp, 'c.conf')
        with open(conf, 'w') as f:
            # Nothing listens on port 9: a refusal after a connection try
            # would be exit 3, not 2.
            f.write('[snapshot_ext_glance]\nauth_type = none\n'
                    'endpoint_override = http://127.0.0.1:9\n')
        data = base.sample_request_dict()
        data['block_device_mappings'][1]['device_name'] = '/dev/vda'
        path = os.path.join(tmp, 'r.json')
        with open(path, 'w') as f:
            json.dump(data, f)
        self.assertEqual(2, main.main(['snapshot', '--config-file', conf,
                                       '--format', 'json', path]))
        error = json.loads(stdout.getvalue())['error']
        self.assertIn('block_device_mappings[1].device_name', error)
        self.assertIn('block_device_mappings[0].device_name', error)
