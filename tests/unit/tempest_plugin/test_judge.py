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

"""The Tempest plugin's judge of a snapshot image (no cloud needed)."""

import json

import testtools

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext_tempest_plugin import config
from nova_snapshot_ext_tempest_plugin import judge

ROOT_SNAP = '11111111-1111-4111-8111-111111111111'
DATA_SNAP = '22222222-2222-4222-8222-222222222222'


def _image(**overrides):
    image = {
        'id': 'img', 'status': 'active', 'disk_format': 'raw',
        'container_format': 'bare', 'size': 0, 'min_disk': 1,
        'bdm_v2': 'True',
        'block_device_mapping': json.dumps([
            {'source_type': 'snapshot', 'destination_type': 'volume',
             'snapshot_id': DATA_SNAP, 'boot_index': None,
             'device_name': '/dev/vdb', 'volume_size': 1},
            {'source_type': 'snapshot', 'destination_type': 'volume',
             'snapshot_id': ROOT_SNAP, 'boot_index': 0,
             'device_name': '/dev/vda', 'volume_size': 1},
        ]),
    }
    image.update(overrides)
    return image


class MappingTest(testtools.TestCase):

    def test_snapshot_ids_boot_disk_first(self):
        self.assertEqual([ROOT_SNAP, DATA_SNAP], judge.snapshot_ids(_image()))

    def test_mapping_as_a_list_too(self):
        image = _image()
        image['block_device_mapping'] = json.loads(
            image['block_device_mapping'])
        self.assertEqual([ROOT_SNAP, DATA_SNAP], judge.snapshot_ids(image))

    def test_no_mapping(self):
        self.assertEqual([], judge.snapshot_ids({'id': 'x'}))
        problems = judge.mapping_problems({'id': 'x', 'bdm_v2': 'True'}, 1)
        self.assertEqual(2, len(problems), problems)

    def test_not_a_list(self):
        self.assertRaises(ValueError, judge.mapping,
                          {'block_device_mapping': '{"a": 1}'})
        self.assertEqual(1, len(judge.mapping_problems(
            {'block_device_mapping': '{"a": 1}'}, 1)))

    def test_sound_mapping(self):
        self.assertEqual([], judge.mapping_problems(_image(), 2))

    def test_wrong_count(self):
        problems = judge.mapping_problems(_image(), 3)
        self.assertIn('names 2 volume snapshots', problems[0])

    def test_live_volume_entry(self):
        entries = json.loads(_image()['block_device_mapping'])
        entries.append({'source_type': 'volume', 'volume_id': 'v',
                        'destination_type': 'volume', 'boot_index': 1})
        problems = judge.mapping_problems(
            _image(block_device_mapping=json.dumps(entries)), 2)
        self.assertEqual(1, len(problems), problems)
        self.assertIn('live volume', problems[0])

    def test_no_boot_entry(self):
        entries = json.loads(_image()['block_device_mapping'])
        entries[1]['boot_index'] = 1
        problems = judge.mapping_problems(
            _image(block_device_mapping=json.dumps(entries)), 2)
        self.assertEqual(1, len(problems), problems)
        self.assertIn('boot_index 0', problems[0])

    def test_bdm_v2_and_connection_info(self):
        entries = json.loads(_image()['block_device_mapping'])
        entries[0]['connection_info'] = '{"secret": 1}'
        problems = judge.mapping_problems(
            _image(block_device_mapping=json.dumps(entries), bdm_v2=None), 2)
        self.assertEqual(2, len(problems), problems)


class DataTest(testtools.TestCase):
    """The bytes Glance serves, judged by the format inspector."""

    def test_every_honest_payload_passes(self):
        from nova_snapshot_ext.image import payloads

        for disk_format in ('raw', 'qcow2', 'vhd', 'vhdx', 'vmdk', 'vdi',
                            'iso', 'ploop'):
            data = payloads.payload(disk_format)
            self.assertEqual([], judge.data_problems(
                _image(disk_format=disk_format, size=len(data)), data),
                disk_format)

    def test_zero_bytes_labelled_qcow2(self):
        problems = judge.data_problems(_image(disk_format='qcow2'), b'')
        self.assertIn('zero bytes labelled qcow2', problems[0])

    def test_bytes_of_another_format(self):
        from nova_snapshot_ext.image import payloads

        data = payloads.payload('vmdk')
        problems = judge.data_problems(
            _image(disk_format='qcow2', size=len(data)), data)
        self.assertEqual(['the bytes are vmdk to the format inspector, '
                          'not qcow2'], problems)

    def test_size_and_raw_bytes(self):
        problems = judge.data_problems(_image(size=0), b'\0' * 512)
        self.assertEqual(['Glance says size 0, its download has 512 bytes',
                          '512 bytes labelled raw: a metadata-only image '
                          'holds no disk data'], problems)

    def test_unsafe_qcow2_fails_the_safety_check(self):
        from nova_snapshot_ext.image import payloads

        # A backing file name in the header: Glance refuses it on upload.
        data = bytearray(payloads.payload('qcow2'))
        data[8:16] = (len(data) - 8).to_bytes(8, 'big')
        data[16:20] = (8).to_bytes(4, 'big')
        data[-8:] = b'/etc/pwd'
        problems = judge.data_problems(
            _image(disk_format='qcow2', size=len(data)), bytes(data))
        self.assertEqual(1, len(problems), problems)
        self.assertIn('safety check', problems[0])


class PayloadTest(testtools.TestCase):

    def test_zero_bytes_raw_is_honest(self):
        self.assertEqual([], judge.payload_problems(
            _image(), allowed_formats=('raw', 'qcow2'), root_size_gb=1))

    def test_qcow2_payload_is_honest(self):
        self.assertEqual([], judge.payload_problems(
            _image(disk_format='qcow2', size=1536),
            allowed_formats=('qcow2',), expected_formats=['qcow2']))

    def test_zero_bytes_labelled_qcow2(self):
        problems = judge.payload_problems(_image(disk_format='qcow2'))
        self.assertEqual(['zero bytes labelled qcow2 (only raw is true of '
                          'zero bytes)'], problems)

    def test_data_labelled_raw_or_too_big(self):
        problems = judge.payload_problems(_image(size=10 ** 9))
        self.assertEqual(2, len(problems), problems)

    def test_format_not_allowed_or_not_expected(self):
        problems = judge.payload_problems(
            _image(), allowed_formats=('qcow2',), expected_formats=['qcow2'])
        self.assertEqual(2, len(problems), problems)

    def test_not_active_not_bare_no_size(self):
        problems = judge.payload_problems(_image(
            status='queued', container_format='ovf', size=None))
        self.assertEqual(3, len(problems), problems)

    def test_min_disk_above_root(self):
        problems = judge.payload_problems(_image(min_disk=5), root_size_gb=1)
        self.assertEqual(1, len(problems), problems)


class HelpersTest(testtools.TestCase):

    def test_schema_disk_formats(self):
        schema = {'properties': {'disk_format': {
            'enum': [None, 'ami', 'qcow2', 'raw']}}}
        self.assertEqual(('ami', 'qcow2', 'raw'),
                         judge.schema_disk_formats(schema))
        self.assertEqual((), judge.schema_disk_formats({}))

    def test_rotation_kept(self):
        self.assertEqual(['c', 'd'], judge.rotation_kept(['a', 'b', 'c', 'd'],
                                                         2))
        self.assertEqual(['d'], judge.rotation_kept(['a', 'b', 'c', 'd'], 0))
        self.assertEqual(['a'], judge.rotation_kept(['a'], 2))

    def test_options_listed_by_group(self):
        groups = dict(config.list_opts())
        self.assertEqual(['nova_snapshot_ext'],
                         [o.name for o in groups['service_available']])
        self.assertIn('expected_disk_formats',
                      [o.name for o in groups['nova_snapshot_ext']])


class MarkerTest(testtools.TestCase):
    """The data round trip's judge: the same marker on the same disk."""

    SOURCE = ('NSE-BOOT 0000000000000001\nNSE-DISK vda 2097152\n'
              'NSE-WROTE vda NSEMARK-aaaaaaaaaaaaaaaaaaaaaaaa\n'
              'NSE-DISK vdb 2097152\n'
              'NSE-WROTE vdb NSEMARK-bbbbbbbbbbbbbbbbbbbbbbbb\nNSE-DONE\n')

    def copy(self, vda='READ vda NSEMARK-aaaaaaaaaaaaaaaaaaaaaaaa',
             vdb='READ vdb NSEMARK-bbbbbbbbbbbbbbbbbbbbbbbb'):
        lines = ['NSE-BOOT 0000000000000002']
        for disk, said in (('vda', vda), ('vdb', vdb)):
            if said:
                lines += ['NSE-DISK %s 2097152' % disk, 'NSE-' + said]
        return judge.console_markers('\n'.join(lines + ['NSE-DONE']))

    def test_the_same_markers_on_the_same_disks(self):
        source = judge.console_markers(self.SOURCE)
        self.assertEqual([], judge.marker_problems(source, self.copy()))

    def test_each_kind_of_difference_named(self):
        source = judge.console_markers(self.SOURCE)
        # Disks swapped: each reads the other's marker.
        swapped = self.copy(vda='READ vda NSEMARK-bbbbbbbbbbbbbbbbbbbbbbbb',
                            vdb='READ vdb NSEMARK-aaaaaaaaaaaaaaaaaaaaaaaa')
        self.assertEqual(
            ['vda: the source had NSEMARK-aaaaaaaaaaaaaaaaaaaaaaaa, the copy '
             'read NSEMARK-bbbbbbbbbbbbbbbbbbbbbbbb',
             'vdb: the source had NSEMARK-bbbbbbbbbbbbbbbbbbbbbbbb, the copy '
             'read NSEMARK-aaaaaaaaaaaaaaaaaaaaaaaa'],
            judge.marker_problems(source, swapped))
        # An empty disk: the copy wrote a new marker (the data is lost).
        empty = self.copy(vdb='WROTE vdb NSEMARK-cccccccccccccccccccccccc')
        self.assertEqual(
            ['vdb: the source had NSEMARK-bbbbbbbbbbbbbbbbbbbbbbbb, the copy '
             'wrote NSEMARK-cccccccccccccccccccccccc'],
            judge.marker_problems(source, empty))
        # A disk missing.
        self.assertEqual(['vdb: the copy shows no marker (disks seen: vda)'],
                         judge.marker_problems(source, self.copy(vdb=None)))

    def test_nothing_to_compare_and_a_smaller_disk(self):
        empty = judge.console_markers('NSE-BOOT 0000000000000001\nNSE-DONE')
        self.assertEqual(['the source showed no marker: nothing to compare'],
                         judge.marker_problems(empty, self.copy()))
        source = judge.console_markers(self.SOURCE.replace(
            'NSE-DISK vdb 2097152', 'NSE-DISK vdb 4194304'))
        self.assertEqual(["vdb: the copy's disk has 2097152 sectors, the "
                          "source's 4194304"],
                         judge.marker_problems(source, self.copy()))

    def test_lists_after_json_are_the_same_marker(self):
        source = json.loads(json.dumps(judge.console_markers(self.SOURCE)))
        copy = json.loads(json.dumps(self.copy()))
        self.assertEqual([], judge.marker_problems(source, copy))

    def test_the_option_is_registered(self):
        names = [o.name for o in dict(config.list_opts())['nova_snapshot_ext']]
        self.assertIn('marker_image_ref', names)


class ConsistencyProblemsTest(testtools.TestCase):

    FROZEN = ('NSE-BOOT 0000000000000001\nNSE-LOG vdb 0 ok\nNSE-DONE\n'
              'NSE-FSFREEZE freeze 40\nNSE-FSFREEZE thaw 43\n')

    def copy(self, journal='clean', fsck=0, records=41, log='ok'):
        return judge.console_markers(
            'NSE-BOOT 0000000000000002\nNSE-JOURNAL vdb %s\n'
            'NSE-FSCK vdb %d\nNSE-LOG vdb %d %s\nNSE-DONE\n'
            % (journal, fsck, records, log))

    def test_a_frozen_snapshot_is_consistent(self):
        source = judge.console_markers(self.FROZEN)
        for records in (40, 41, 43):
            self.assertEqual([], judge.consistency_problems(
                source, self.copy(records=records)))

    def test_each_kind_of_inconsistency_named(self):
        source = judge.console_markers(self.FROZEN)
        self.assertEqual(
            ['vdb: the journal needs recovery: the snapshot was not taken '
             'while the filesystem was frozen',
             'vdb: e2fsck -fn exited with 4',
             'vdb: a log record is cut short or out of order',
             'vdb: the log holds 39 records; the guest had written 40 at '
             'the freeze and 43 at the thaw'],
            judge.consistency_problems(source, self.copy(
                journal='recovery', fsck=4, records=39, log='torn')))
        self.assertEqual(
            ['vdb: the log holds 44 records; the guest had written 40 at '
             'the freeze and 43 at the thaw'],
            judge.consistency_problems(source, self.copy(records=44)))
        bare = judge.console_markers('NSE-BOOT 0000000000000002\nNSE-DONE\n')
        self.assertEqual(['vdb: the copy shows no log filesystem'],
                         judge.consistency_problems(source, bare))

    def test_a_foreign_or_unread_log_is_named_as_such(self):
        source = judge.console_markers(self.FROZEN)
        foreign = judge.console_markers(
            'NSE-BOOT 0000000000000002\nNSE-JOURNAL vdb foreign\n'
            'NSE-DONE\n')
        self.assertEqual(["vdb: the copy holds a filesystem that is not "
                          "the marker guest's log"],
                         judge.consistency_problems(source, foreign))
        partial = judge.console_markers(
            'NSE-BOOT 0000000000000002\nNSE-JOURNAL vdb clean\n'
            'NSE-DONE\n')
        self.assertEqual(["vdb: the copy's console lacks fsck, log, records"],
                         judge.consistency_problems(source, partial))

    def test_a_freeze_without_a_count_proves_nothing(self):
        for text in ('NSE-FSFREEZE freeze\nNSE-FSFREEZE thaw 43\n',
                     'NSE-FSFREEZE freeze 40\nNSE-FSFREEZE thaw \n'):
            source = judge.console_markers('NSE-BOOT 0000000000000001\n'
                                           + text)
            self.assertEqual(["the source's freeze and thaw lines give no "
                              "record count (a marker guest built before "
                              "the log): rebuild it"],
                             judge.consistency_problems(source, self.copy()),
                             text)

    def test_no_quiesce_no_claim(self):
        source = judge.console_markers('NSE-BOOT 0000000000000001\nNSE-DONE')
        self.assertEqual(['the source shows no freeze and thaw (none): no '
                          'quiesce to judge'],
                         judge.consistency_problems(source, self.copy()))


def _copy(backup_id, snapshot_id, device, boot_index, status='available',
          image='img', server='srv', set_size=2, **meta):
    record = {copies.IMAGE_KEY: image, copies.SERVER_KEY: server,
              copies.DEVICE_KEY: device,
              copies.BOOT_INDEX_KEY: str(boot_index),
              copies.SET_SIZE_KEY: str(set_size)}
    record.update(meta)
    return {'id': backup_id, 'snapshot_id': snapshot_id, 'status': status,
            'fail_reason': None, 'metadata': record}


class CopyTest(testtools.TestCase):

    def good(self):
        return [_copy('b-root', ROOT_SNAP, '/dev/vda', 0),
                _copy('b-data', DATA_SNAP, '/dev/vdb', -1)]

    def test_copies_of_the_image_only(self):
        other = _copy('b-other', ROOT_SNAP, '/dev/vda', 0, image='img2')
        plain = {'id': 'b-plain', 'snapshot_id': ROOT_SNAP,
                 'metadata': None}
        found = judge.copies_of(self.good() + [other, plain], 'img')
        self.assertEqual(['b-root', 'b-data'], [b['id'] for b in found])

    def test_a_copy_per_disk_recorded_is_sound(self):
        self.assertEqual([], judge.copy_problems(_image(), 'srv',
                                                 self.good()))

    def test_each_kind_of_difference_named(self):
        found = self.good()
        found[0]['status'] = 'error'
        found[0]['fail_reason'] = 'cinder-backup died'
        found[1]['metadata'][copies.DEVICE_KEY] = '/dev/vdz'
        found.append(_copy('b-stray', 'other-snap', '/dev/vdc', -1))
        problems = judge.copy_problems(_image(), 'srv', found)
        # In the mapping's order (the data disk's entry comes first).
        self.assertEqual(3, len(problems), problems)
        self.assertIn("snapshot_ext_device = '/dev/vdz', not '/dev/vdb'",
                      problems[0])
        self.assertIn('is error: cinder-backup died', problems[1])
        self.assertIn('does not name', problems[2])

    def test_a_missing_or_twice_made_copy_named(self):
        found = self.good()[:1]
        problems = judge.copy_problems(_image(), 'srv', found)
        self.assertEqual(['0 copies of volume snapshot %s (/dev/vdb), not 1'
                          % DATA_SNAP], problems)
        twice = self.good() + [_copy('b-again', DATA_SNAP, '/dev/vdb', -1)]
        self.assertIn('2 copies', judge.copy_problems(_image(), 'srv',
                                                      twice)[0])

    def test_another_server_or_set_size_named(self):
        found = [_copy('b-root', ROOT_SNAP, '/dev/vda', 0, server='x'),
                 _copy('b-data', DATA_SNAP, '/dev/vdb', -1, set_size=3)]
        problems = judge.copy_problems(_image(), 'srv', found)
        self.assertEqual(2, len(problems), problems)
        self.assertIn('snapshot_ext_set_size', problems[0])
        self.assertIn('snapshot_ext_server', problems[1])

    def test_the_option_is_registered(self):
        self.assertIn('backup_copies', [o.name for o in config.opts])
