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

"""``nova-snapshot-ext restore``: arguments, listing, exit statuses."""

import argparse
import functools
import json

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import restore as restore_cmd
from nova_snapshot_ext import exception
from nova_snapshot_ext.restore import compute as compute_mod
from nova_snapshot_ext.restore import service
from tests import base
from tests.unit.cmd import test_cmd
from tests.unit.restore import fakes

IMAGE_OLD = '22222222-2222-4333-8444-555555555555'


def args(**changes):
    # --name is stored as server_name: oslo.config's sub-command answers
    # .name with its own name.
    values = dict(image=None, server=fakes.SERVER, backup_type=None,
                  list=False, server_name=None, flavor='m1.small',
                  volumes_only=False, networks='auto', timeout=600.0)
    values.update(changes)
    return argparse.Namespace(**values)


class TestCheckArgs(base.TestCase):

    def assertRefused(self, text, **changes):
        err = self.assertRaises(checks.CLIError, restore_cmd.check_args,
                                args(**changes))
        self.assertEqual(checks.EXIT_INPUT, err.code)
        self.assertIn(text, err.message)

    def test_good_arguments_pass(self):
        self.assertIsNone(restore_cmd.check_args(args()))
        self.assertIsNone(restore_cmd.check_args(args(
            flavor=None, volumes_only=True, server_name='db',
            networks='n-1,n-2',
            backup_type='daily')))

    def test_backup_type_needs_server(self):
        self.assertRefused('--backup-type needs --server', server=None,
                           image='img', backup_type='daily')
        self.assertRefused('--backup-type needs --server', server=None,
                           image='img', backup_type='daily', list=True)

    def test_flavor_or_volumes_only(self):
        self.assertRefused('--flavor is needed', flavor=None)
        self.assertRefused('--flavor and --volumes-only exclude each other',
                           volumes_only=True)

    def test_timeout_must_be_positive(self):
        for timeout in (0.0, -1.0, float('nan'), float('inf')):
            self.assertRefused('--timeout must be a number of seconds '
                               'more than 0', timeout=timeout)

    def test_networks_mixing_auto_or_none_refused(self):
        for networks in ('auto,none', 'none,net-1', 'net-1,AUTO'):
            self.assertRefused('--networks must be auto, none or network '
                               'ids', networks=networks)

    def test_networks_words_normalised(self):
        self.assertEqual('auto', restore_cmd.networks_of(' AUTO '))
        self.assertEqual(['n-1', 'n-2'],
                         restore_cmd.networks_of('n-1,n-2,n-1'))

    def test_blank_name_and_networks_refused(self):
        self.assertRefused('--name must not be empty', server_name=' ')
        self.assertRefused('--networks must not be empty', networks='  ')

    def test_networks_naming_no_network_refused(self):
        for networks in (',', ' , ,'):
            self.assertRefused("--networks must be auto, none or network "
                               "ids, got %r" % networks, networks=networks)
        self.assertRefused('--networks must not be empty', networks='')

    def test_list_needs_no_restore_argument(self):
        self.assertIsNone(restore_cmd.check_args(args(
            list=True, flavor=None, timeout=0.0, networks=',')))

    def test_blank_value_refused_with_list_too(self):
        self.assertRefused('--name must not be empty', list=True,
                           server_name=' ')


class TestNetworksOf(base.TestCase):

    def test_auto_and_none_as_nova_takes_them(self):
        self.assertEqual('auto', restore_cmd.networks_of('auto'))
        self.assertEqual('none', restore_cmd.networks_of('none'))

    def test_network_ids(self):
        self.assertEqual(['n-1'], restore_cmd.networks_of('n-1'))
        self.assertEqual(['n-1', 'n-2'],
                         restore_cmd.networks_of(' n-1 , n-2,'))

    def test_no_network_id_is_an_empty_list(self):
        # Refused by check_args: Nova would read [] as no network at all.
        self.assertEqual([], restore_cmd.networks_of(','))


class CinderClient(fakes.FakeCinder):
    """The ``[snapshot_ext_cinder]`` client ``restore`` is given."""

    def __init__(self, backups):
        super().__init__()
        # Restored volumes and the server are ready at the first look.
        self.default_statuses = ['available']
        self.backups = backups
        self.project_id = fakes.PROJECT
        self.siblings = []
        self.list_error = None

    def list_backups(self):
        if self.list_error is not None:
            raise self.list_error
        return iter(self.backups)

    def sibling(self, service_type):
        self.siblings.append(service_type)
        return 'adapter on %s' % service_type


class RestoreCommandTestCase(test_cmd.CLITestCase):
    """``main.main`` with a fake Cinder, Nova, and a clock of its own."""

    def setUp(self):
        super().setUp()
        self.cinder = CinderClient(
            fakes.two_disk_set(IMAGE_OLD, '2024-05-01T10:00:00') +
            fakes.two_disk_set(fakes.IMAGE, '2024-05-02T10:00:00'))
        self.compute = fakes.FakeCompute(cinder=self.cinder)
        self.compute.statuses = ['ACTIVE']
        self.adapters = []
        self.restores = []
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.cmd.backup.cinder_client',
            lambda conf: self.cinder))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.restore.Compute', self.make_compute))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.restore.Restore', self.make_restore))
        self.conf_file = self.write('c.conf', '')

    def make_compute(self, adapter):
        self.adapters.append(adapter)
        return self.compute

    def make_restore(self, *args, **kwargs):
        # Nothing sleeps: a clock of its own.
        clock = fakes.Clock()
        self.restores.append(kwargs)
        return functools.partial(service.Restore, clock=clock,
                                 sleep=clock.sleep)(*args, **kwargs)

    def restore(self, *argv):
        return self.run_main('restore', '--config-file', self.conf_file,
                             '--no-progress', *argv)


class TestRestoreCommand(RestoreCommandTestCase):

    def test_list_a_server_s_sets(self):
        self.cinder.backups[0]['status'] = 'creating'
        self.assertEqual(0, self.restore('--server', fakes.SERVER, '--list'))
        out = self.stdout.getvalue()
        self.assertIn('backup image %s of server %s (daily), '
                      '2024-05-02T10:00:00: restorable'
                      % (fakes.IMAGE, fakes.SERVER), out)
        self.assertIn('backup image %s of server %s (daily), '
                      '2024-05-01T10:00:00: copies not available: /dev/vda'
                      % (IMAGE_OLD, fakes.SERVER), out)
        self.assertIn('  /dev/vdb: backup b-data-1111, 5 GiB, available',
                      out)
        # Newest first; nothing restored.
        self.assertLess(out.index(fakes.IMAGE), out.index(IMAGE_OLD))
        self.assertEqual([], self.cinder.restored)
        self.assertEqual([], self.adapters)

    def test_list_one_image_as_json(self):
        self.assertEqual(0, self.run_main(
            '--format', 'json', 'restore', '--config-file', self.conf_file,
            '--image', IMAGE_OLD, '--list'))
        document = json.loads(self.stdout.getvalue())
        self.assertEqual([IMAGE_OLD],
                         [s['image_id'] for s in document['sets']])
        self.assertEqual(['b-root-2222', 'b-data-2222'],
                         [m['backup_id']
                          for m in document['sets'][0]['members']])

    def test_list_nothing_found(self):
        self.assertEqual(0, self.restore('--server', 'srv-x', '--list'))
        self.assertEqual('no copies found\n', self.stdout.getvalue())

    def test_restore_a_server_s_newest_set(self):
        self.assertEqual(0, self.restore('--server', fakes.SERVER,
                                         '--flavor', 'm1.small',
                                         '--networks', 'n-1,n-2',
                                         '--timeout', '30'))
        [created] = self.compute.created
        self.assertEqual(('f-2', ['n-1', 'n-2']),
                         (created['flavor_id'], created['networks']))
        self.assertEqual(['b-root-1111', 'b-data-1111'],
                         [b for b, _, _ in self.cinder.restored])
        self.assertEqual(['adapter on compute'], self.adapters)
        self.assertEqual(30.0, self.restores[0]['timeout'])
        self.assertIsNone(self.restores[0]['say'])
        self.assertIn('restored the copies of backup image %s'
                      % fakes.IMAGE, self.stdout.getvalue())
        self.assertIn('server srv-new ACTIVE', self.stdout.getvalue())

    def test_restore_volumes_only_of_an_image_as_json(self):
        self.assertEqual(0, self.run_main(
            '--format', 'json', 'restore', '--config-file', self.conf_file,
            '--image', IMAGE_OLD, '--volumes-only'))
        document = json.loads(self.stdout.getvalue())
        self.assertIsNone(document['server_id'])
        self.assertEqual(IMAGE_OLD, document['copy_set']['image_id'])
        self.assertEqual(['b-root-2222', 'b-data-2222'],
                         [b for b, _, _ in self.cinder.restored])
        # No Nova without a server.
        self.assertEqual([], self.adapters)
        self.assertEqual([], self.cinder.siblings)

    # --name is args.server_name: oslo.config's SubCommandOpt answers
    # args.name with the sub-command's own name ('restore').

    def test_name_names_the_server_and_its_volumes(self):
        self.assertEqual(0, self.restore('--image', IMAGE_OLD, '--flavor',
                                         'm1.small', '--name', 'db'))
        self.assertEqual(
            [('db', ['db-vda', 'db-vdb'])],
            [(c['name'], [n for _, n, _ in self.cinder.restored])
             for c in self.compute.created])

    def test_default_name_is_restore_and_the_image(self):
        self.assertEqual(0, self.restore('--image', IMAGE_OLD, '--flavor',
                                         'm1.small'))
        [created] = self.compute.created
        self.assertEqual('restore-%s' % IMAGE_OLD, created['name'])
        self.assertEqual(['restore-%s-vda' % IMAGE_OLD,
                          'restore-%s-vdb' % IMAGE_OLD],
                         [n for _, n, _ in self.cinder.restored])

    def test_blank_name_refused(self):
        code = self.restore('--image', IMAGE_OLD, '--flavor', 'm1.small',
                            '--name', ' ')
        self.assertEqual((2, []), (code, self.cinder.restored))
        self.assertIn('--name must not be empty', self.stderr.getvalue())

    def test_networks_naming_no_network_exit_2_before_cinder_is_asked(self):
        self.cinder.list_error = AssertionError('Cinder asked')
        code = self.restore('--image', IMAGE_OLD, '--flavor', 'm1.small',
                            '--networks', ',')
        self.assertEqual((2, []), (code, self.cinder.restored))
        self.assertIn("--networks must be auto, none or network ids, got "
                      "','", self.stderr.getvalue())

    def test_nova_unreachable_exits_3(self):
        # The documented exit status (cmd/restore.py:24): Nova not reached
        # is a ComputeUnavailable, exit 3 as for Cinder.
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.restore.Compute',
            lambda adapter: compute_mod.Compute(ks_adapter.Adapter(
                ks_session.Session(), service_type='compute',
                endpoint_override='http://127.0.0.1:9',
                connect_retries=0))))
        code = self.restore('--image', IMAGE_OLD, '--flavor', 'm1.small')
        self.assertIn('Nova could not be reached for read of flavor '
                      'm1.small', self.stderr.getvalue())
        self.assertEqual([], self.cinder.restored)
        self.assertEqual(3, code)

    def test_nova_refusing_the_credentials_exits_3(self):
        self.compute.flavor_id = self.forbidden
        code = self.restore('--image', IMAGE_OLD, '--flavor', 'm1.small')
        self.assertEqual((3, []), (code, self.cinder.restored))
        self.assertIn('Nova refused read of flavor m1.small to these '
                      'credentials (options [snapshot_ext_cinder])',
                      self.stderr.getvalue())

    @staticmethod
    def forbidden(name_or_id):
        raise exception.ComputeForbidden(
            operation='read', resource='flavor %s' % name_or_id,
            reason='Forbidden (HTTP 403)')

    def test_refused_exits_1_nothing_made(self):
        self.assertEqual(1, self.restore('--image', 'img-x', '--flavor', 'x'))
        self.assertIn('Restore refused, nothing was made',
                      self.stderr.getvalue())
        self.assertEqual([], self.cinder.restored)

    def test_failed_midway_exits_1_naming_what_it_made(self):
        self.compute.statuses = ['ERROR']
        self.assertEqual(1, self.run_main(
            '--format', 'json', 'restore', '--config-file', self.conf_file,
            '--image', fakes.IMAGE, '--flavor', 'm1.small'))
        document = json.loads(self.stdout.getvalue())
        self.assertEqual(1, document['exit_code'])
        self.assertEqual([{'kind': 'server', 'id': 'srv-new',
                           'fate': 'deleted'},
                          {'kind': 'volume', 'id': 'vol-1',
                           'fate': 'deleted'},
                          {'kind': 'volume', 'id': 'vol-2',
                           'fate': 'deleted'}], document['made'])
        self.assertIn('Restore failed while waiting for the server',
                      document['error'])
        self.assertIn('error: Restore failed', self.stderr.getvalue())

    def test_cinder_unreachable_exits_3(self):
        self.cinder.list_error = exception.CinderUnavailable(
            operation='list', resource='backups', reason='refused')
        self.assertEqual(3, self.restore('--server', fakes.SERVER, '--list'))
        self.assertIn('Cinder could not be reached for list of backups',
                      self.stderr.getvalue())

    def test_bad_arguments_exit_2_before_cinder_is_asked(self):
        self.cinder.list_error = AssertionError('Cinder asked')
        self.assertEqual(2, self.restore('--server', fakes.SERVER))
        self.assertIn('--flavor is needed', self.stderr.getvalue())

    def test_no_cinder_credentials_exit_2(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.cmd.backup.cinder_client', lambda conf: None))
        self.assertEqual(2, self.restore('--server', fakes.SERVER, '--list'))
        self.assertIn('[snapshot_ext_cinder] auth_type',
                      self.stderr.getvalue())


class TestRestoreInterrupted(RestoreCommandTestCase):
    """Ctrl-C during a restore: exit 130, every fate named."""

    def interrupt_at_the_second_volume(self):
        self.cinder.restore_errors['b-data-1111'] = KeyboardInterrupt()

    def test_text_names_the_undo_and_each_fate(self):
        self.interrupt_at_the_second_volume()
        code = self.restore('--image', fakes.IMAGE, '--flavor', 'm1.small')
        self.assertEqual(130, code)
        self.assertIn('error: interrupted; the restore was undone; volume '
                      'vol-1 deleted', self.stderr.getvalue())
        self.assertEqual(['vol-1'], self.cinder.deleted)
        self.assertEqual([], self.compute.created)
        # Not a snapshot's report.
        self.assertNotIn('no image of this run', self.stderr.getvalue())
        self.assertEqual('', self.stdout.getvalue())

    def test_json_has_made(self):
        self.interrupt_at_the_second_volume()
        code = self.run_main(
            '--format', 'json', 'restore', '--config-file', self.conf_file,
            '--no-progress', '--image', fakes.IMAGE, '--flavor', 'm1.small')
        self.assertEqual(130, code)
        document = json.loads(self.stdout.getvalue())
        self.assertEqual(130, document['exit_code'])
        # The restore request in flight may have made its volume.
        self.assertEqual([{'kind': 'volume', 'id': 'vol-1',
                           'fate': 'deleted'},
                          {'kind': 'volume', 'id': '(unknown)',
                           'fate': 'unknown: interrupted while Cinder '
                           'restored backup b-data-1111 into a volume named '
                           'restore-%s-vdb' % fakes.IMAGE}], document['made'])
        self.assertIn('the restore was undone', document['error'])
        self.assertNotIn('left', document)

    def test_server_and_volume_left_named(self):
        self.compute.statuses = ['BUILD']
        self.compute.delete_error = exception.ComputeUnavailable(
            operation='delete', resource='server srv-new', reason='reset')

        def interrupted(restore, server_id):
            raise KeyboardInterrupt()
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.restore.service.Restore._wait_server',
            interrupted))
        code = self.run_main(
            '--format', 'json', 'restore', '--config-file', self.conf_file,
            '--no-progress', '--image', fakes.IMAGE, '--flavor', 'm1.small')
        self.assertEqual(130, code)
        made = json.loads(self.stdout.getvalue())['made']
        self.assertEqual([('server', 'srv-new'), ('volume', 'vol-1'),
                          ('volume', 'vol-2')],
                         [(m['kind'], m['id']) for m in made])
        for entry in made:
            self.assertTrue(entry['fate'].startswith('left: '), entry)
        self.assertEqual([], self.cinder.deleted)
        self.assertIn('server srv-new left: Nova could not be reached',
                      self.stderr.getvalue())
        self.assertIn('volume vol-2 left: attached to server srv-new, which '
                      'was not deleted', self.stderr.getvalue())

    def test_interrupt_before_anything_made(self):
        self.cinder.restore_errors['b-root-1111'] = KeyboardInterrupt()
        code = self.run_main(
            '--format', 'json', 'restore', '--config-file', self.conf_file,
            '--no-progress', '--image', fakes.IMAGE, '--flavor', 'm1.small')
        self.assertEqual(130, code)
        document = json.loads(self.stdout.getvalue())
        [in_flight] = document['made']
        self.assertEqual(('volume', '(unknown)'),
                         (in_flight['kind'], in_flight['id']))
        self.assertTrue(in_flight['fate'].startswith(
            'unknown: interrupted while Cinder restored backup b-root-1111'))
        self.assertTrue(document['error'].startswith(
            'interrupted; the restore was undone'), document['error'])
