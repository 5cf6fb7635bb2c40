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

"""The console script, as an operator runs it, against a real Glance."""

import http.client
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.parse
import uuid

import fixtures
import testtools

from nova_snapshot_ext.embedded import demo
from nova_snapshot_ext.snapshot import request as request_mod
from tests import base
from tests.functional import base as fbase
from tests.functional import test_faults


class TestCLI(fbase.FunctionalTestCase):

    GLANCE_PROFILE = 'no-raw'
    GLANCE_OVERRIDES = {'identity': 'token'}

    def setUp(self):
        super().setUp()
        self.conf_file = self.write_cli_config('snapshot.conf', 'hyperv')

    def run_cli(self, *args):
        return subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main'] +
            list(args), capture_output=True, text=True, timeout=120,
            check=False)

    def write_request(self, **changes):
        data = base.sample_request_dict()
        data['server']['project_id'] = self.project_id
        data['requester']['project_id'] = self.project_id
        data['name'] = 'cli-%s' % self.project_id[:8]
        data.update(changes)
        path = os.path.join(self.tmp, 'request.json')
        with open(path, 'w', encoding='utf-8') as f:
            json.dump(data, f)
        return path, data['name']

    def test_snapshot_json(self):
        path, name = self.write_request()
        proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                            '--format', 'json', path)
        self.assertEqual(0, proc.returncode, proc.stderr)
        out = json.loads(proc.stdout)
        self.assertEqual(('active', 'vhdx'),
                         (out['image']['status'],
                          out['image']['disk_format']))
        self.assertEqual(out['result']['image_id'], out['image']['id'])
        self.assertEqual('hyperv', out['image']['hypervisor_type'])

    def test_admin_token_owner_of_the_server_project_is_private(self):
        # admin_token (as serve writes): the identity's project is the
        # server's, the requester another.  Glance makes the server's
        # project the owner; Nova would keep such an image private, never
        # shared with no member.  The command warns about the owner.
        path, name = self.write_request(requester={
            'project_id': 'requester-project', 'user_id': 'admin-user',
            'roles': ['admin', 'member']})
        proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                            '--format', 'json', path)
        self.assertEqual(0, proc.returncode, proc.stderr)
        out = json.loads(proc.stdout)
        self.assertEqual(('active', self.project_id, 'private'),
                         (out['image']['status'], out['image']['owner'],
                          out['image']['visibility']))
        self.assertIsNone(out['result'].get('member'))
        self.assertIn("warning: image %s is owned by project %s"
                      % (out['image']['id'], self.project_id), proc.stderr)
        self.assertIn("not by the requester's project requester-project",
                      proc.stderr)

    def test_reused_snapshot_ids_exit_2_naming_the_create(self):
        # A second server's request naming the volume snapshots of an
        # image that exists (made from another record): nothing is
        # created or uploaded; the error names the create, the image and
        # the snapshot ids, and the cause is the input (exit 2).
        data = base.sample_request_dict()
        ids = []
        for bdm in data['block_device_mappings']:
            if bdm.get('snapshot_id'):
                bdm['snapshot_id'] = str(uuid.uuid4())
                ids.append(bdm['snapshot_id'])
        mappings = data['block_device_mappings']
        path, name = self.write_request(block_device_mappings=mappings)
        first = self.run_cli('snapshot', '--config-file', self.conf_file,
                             '--format', 'json', path)
        self.assertEqual(0, first.returncode, first.stderr)
        image_id = json.loads(first.stdout)['result']['image_id']
        other = 'other-%s' % name
        server = dict(data['server'], project_id=self.project_id,
                      uuid='11111111-2222-4333-8444-555555555555')
        path, _ = self.write_request(block_device_mappings=mappings,
                                     name=other, server=server)
        proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                            path)
        self.assertEqual(2, proc.returncode, proc.stderr)
        self.assertIn('create of image %s (attempt upload vhdx)' % image_id,
                      proc.stderr)
        for snapshot_id in ids:
            self.assertIn(snapshot_id, proc.stderr)
        self.assertIn('(name, instance_uuid differ)', proc.stderr)
        self.assertNotIn('upload vhdx:', proc.stderr)
        self.assertNoImagesLeft(name_or_filter=other)
        self.assertEqual('active', self.admin_client().images.get(
            image_id)['status'])

    def test_snapshot_human(self):
        path, name = self.write_request()
        proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                            path)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('"status": "active"', proc.stdout)
        self.assertIn('attempt 1: upload vhdx/bare', proc.stdout)

    def test_probe_json(self):
        proc = self.run_cli('probe', '--config-file', self.conf_file,
                            '--format', 'json')
        self.assertEqual(0, proc.returncode, proc.stderr)
        info = json.loads(proc.stdout)
        self.assertNotIn('raw', info['glance']['disk_formats'])
        # Hyper-V's formats first, then every other honest format this
        # Glance allows, smallest first (marked fallback).
        self.assertEqual([('vhdx', False), ('vhd', False), ('iso', False),
                          ('qcow2', True), ('vmdk', True)],
                         [(p['disk_format'], p['fallback'])
                          for p in info['plan']])
        self.assertEqual('hyperv', info['driver']['name'])

    def test_bad_request_names_field_and_creates_nothing(self):
        path, name = self.write_request()
        with open(path) as f:
            data = json.load(f)
        data['block_device_mappings'][1]['volume_size'] = 'big'
        with open(path, 'w') as f:
            json.dump(data, f)
        proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                            path)
        self.assertEqual(2, proc.returncode)
        self.assertIn('block_device_mappings[1].volume_size', proc.stderr)
        self.assertEqual([], self.list_all_images(filters={'name': name}))

    def test_unsafe_records_exit_2_naming_the_field_create_nothing(self):
        # Issue 28: a mapping handing over the source's in-use volume, and
        # metadata that makes deleting the image delete a secret.
        for change, field in (
                (lambda d: d['block_device_mappings'][1].update(
                    destination_type=None, snapshot_id=None),
                 'block_device_mappings[1].snapshot_id'),
                (lambda d: d['metadata'].update(
                    cinder_encryption_key_deletion_policy=(
                        'on_image_deletion')),
                 'metadata.cinder_encryption_key_deletion_policy')):
            path, name = self.write_request()
            with open(path) as f:
                data = json.load(f)
            change(data)
            with open(path, 'w') as f:
                json.dump(data, f)
            proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                                path)
            self.assertEqual(2, proc.returncode, proc.stderr)
            self.assertIn(field, proc.stderr)
            self.assertEqual([], self.list_all_images(
                filters={'name': name}))

    def test_missing_config_file(self):
        path, _ = self.write_request()
        proc = self.run_cli('snapshot', '--config-file',
                            os.path.join(self.tmp, 'nope.conf'), path)
        self.assertEqual(2, proc.returncode)
        self.assertIn('nope.conf does not exist', proc.stderr)

    def test_preflight_refusal_exit_code(self):
        path, name = self.write_request(metadata={'os_glance_x': '1'})
        proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                            path)
        self.assertEqual(2, proc.returncode)
        self.assertIn("'os_glance_x' is reserved", proc.stderr)
        self.assertEqual([], self.list_all_images(filters={'name': name}))


class TestDemo(testtools.TestCase):
    """The README's demo command, as a subprocess."""

    def setUp(self):
        super().setUp()
        if fbase.SKIP_REASON:
            self.skipTest(fbase.SKIP_REASON)

    def test_demo_prints_active_raw_image_with_three_mappings(self):
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'demo',
             '--format', 'json'], capture_output=True, text=True,
            timeout=300, check=False)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        out = json.loads(proc.stdout)
        image = out['image']
        self.assertEqual(('active', 'raw', 'bare', 0),
                         (image['status'], image['disk_format'],
                          image['container_format'], image['size']))
        self.assertEqual(3, len(json.loads(image['block_device_mapping'])))
        # Nothing left: the demo's temp dir is gone.
        self.assertFalse(os.path.exists(image['direct_url'][len('file://'):]
                                        .rsplit('/images/', 1)[0]))

    def test_demo_explains_itself(self):
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'demo',
             '--profile', 'no-raw', '--format', 'json'], capture_output=True,
            text=True, timeout=300, check=False)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        explain = json.loads(proc.stdout)['explain']
        self.assertNotIn('raw', explain['disk_formats'])
        self.assertIn('raw is not allowed here', explain['why_payload'])
        self.assertIn('valid empty qcow2 image', explain['why_payload'])
        dropped = explain['dropped_properties']
        self.assertTrue(dropped['cinder_encryption_key_id'].startswith(
            'secret'))
        self.assertTrue(dropped['os_glance_importing_to_stores'].startswith(
            'glance-state'))
        self.assertIn('token = ***', explain['config'])
        self.assertIn('[snapshot_ext_glance]', explain['config'])

    def test_demo_explains_a_fallback_format(self):
        # vmwareapi reads vmdk and iso; vhd-only allows neither.
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'demo',
             '--profile', 'vhd-only', '--driver', 'vmwareapi', '--format',
             'json'], capture_output=True, text=True, timeout=300,
            check=False)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        why = json.loads(proc.stdout)['explain']['why_payload']
        self.assertIn('valid empty vhd image', why)
        self.assertIn('allows no format driver vmwareapi reads', why)
        self.assertNotIn('that driver vmwareapi reads', why)

    def test_demo_unknown_profile(self):
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'demo',
             '--profile', 'nope'], capture_output=True, text=True,
            timeout=60, check=False)
        self.assertEqual(2, proc.returncode)
        self.assertIn("unknown profile 'nope'", proc.stderr)


class OperatorCLITestCase(fbase.FunctionalTestCase):
    """The console script run as a process against the embedded Glance."""

    GLANCE_PROFILE = 'default'
    GLANCE_OVERRIDES = {'identity': 'token'}

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def write_conf(self, roles=fbase.MEMBER_ROLES, extra='', endpoint=None):
        path = os.path.join(self.tmp, 'c-%d.conf' % len(os.listdir(self.tmp)))
        token = self.glance.token(self.project_id, self.user_id, roles=roles)
        demo.write_config(path, endpoint or self.glance.endpoint, token,
                          'libvirt')
        with open(path, 'a', encoding='utf-8') as f:
            f.write(extra)
        return path

    def run_cli(self, *args):
        return subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main'] +
            list(args), capture_output=True, text=True, timeout=120,
            check=False)


class TestOperatorCLI(OperatorCLITestCase):
    """Conventions and errors an operator meets (issue 12)."""

    def test_global_options_before_or_after_the_command(self):
        conf = self.write_conf()
        for argv in (['--config-file', conf, '--format', 'json', 'probe'],
                     ['probe', '--config-file', conf, '--format=json'],
                     ['--format', 'json', 'probe', '--config-file', conf]):
            proc = self.run_cli(*argv)
            self.assertEqual(0, proc.returncode, (argv, proc.stderr))
            info = json.loads(proc.stdout)
            self.assertEqual('libvirt', info['driver']['name'])

    def test_probe_says_where_the_driver_came_from_and_leaves_nothing(self):
        proc = self.run_cli('probe', '--config-file', self.write_conf())
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('Driver chosen by: [snapshot_ext] driver = libvirt in '
                      '%s' % self.tmp, proc.stdout)
        self.assertIn('create ok, upload ok, share ok, delete ok',
                      proc.stdout)
        self.assertNoImagesLeft(name_or_filter={'owner': self.project_id},
                                only_non_active=False)

    def test_probe_with_reader_only_credentials_names_what_is_missing(self):
        proc = self.run_cli('probe', '--format', 'json', '--config-file',
                            self.write_conf(roles=fbase.READER_ROLES))
        self.assertEqual(1, proc.returncode, proc.stderr)
        perms = json.loads(proc.stdout)['permissions']
        self.assertFalse(perms['ok'])
        self.assertEqual([('create', False)],
                         [(s['step'], s['ok']) for s in perms['steps']])
        self.assertIn('create images', perms['missing'][0])
        self.assertNoImagesLeft(name_or_filter={'owner': self.project_id},
                                only_non_active=False)

    def test_unknown_section_and_option_warned(self):
        conf = self.write_conf(extra='\n[snapshot_ext_glace]\nx = 1\n'
                               '[snapshot_ext]\nactivation_timout = 5\n')
        proc = self.run_cli('probe', '--no-write-check', '--config-file',
                            conf)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('unknown section [snapshot_ext_glace] (did you mean '
                      '[snapshot_ext_glance]?)', proc.stderr)
        self.assertIn('unknown option [snapshot_ext] activation_timout '
                      '(did you mean activation_timeout?)', proc.stderr)

    def test_no_config_file_warned(self):
        proc = self.run_cli('probe', '--format', 'json')
        self.assertEqual(2, proc.returncode)
        self.assertIn('warning: no configuration file found or given',
                      proc.stderr)
        self.assertIn('[snapshot_ext_glance] auth_type',
                      json.loads(proc.stdout)['error'])

    def test_unreachable_glance_is_exit_3_and_names_glance_and_option(self):
        conf = self.write_conf(endpoint='http://127.0.0.1:9')
        proc = self.run_cli('probe', '--format', 'json', '--config-file',
                            conf)
        self.assertEqual(3, proc.returncode, proc.stderr)
        error = json.loads(proc.stdout)['error']
        self.assertIn('Glance at http://127.0.0.1:9', error)
        self.assertIn('[snapshot_ext_glance] endpoint_override', error)
        self.assertNotIn('keystoneauth', proc.stderr)
        self.assertEqual(1, len(proc.stderr.strip().splitlines()),
                         proc.stderr)

    def test_unreachable_keystone_is_named(self):
        conf = os.path.join(self.tmp, 'ks.conf')
        with open(conf, 'w') as f:
            f.write('[snapshot_ext_glance]\nauth_type = password\n'
                    'auth_url = http://127.0.0.1:9/v3\nusername = u\n'
                    'password = secret\nproject_name = p\n'
                    'user_domain_id = default\nproject_domain_id = default\n')
        proc = self.run_cli('snapshot', '--config-file', conf,
                            request_mod.SAMPLE_REQUEST)
        self.assertEqual(3, proc.returncode, proc.stderr)
        self.assertIn('Keystone at http://127.0.0.1:9/v3 could not be '
                      'reached (option [snapshot_ext_glance] auth_url)',
                      proc.stderr)
        self.assertNotIn('secret', proc.stderr)
        self.assertNotIn('Glance', proc.stderr)

    def test_endpoint_that_is_not_glance(self):
        with demo.ObjectServer({'/versions': b'{"nope": 1}'}) as server:
            conf = self.write_conf(endpoint=server.url(''))
            proc = self.run_cli('probe', '--config-file', conf)
        self.assertEqual(3, proc.returncode, proc.stderr)
        self.assertIn('is not a Glance image API', proc.stderr)
        self.assertNotIn('subscriptable', proc.stderr)

    def test_bad_option_value_has_no_internal_repr(self):
        conf = self.write_conf(extra='\n[snapshot_ext]\n'
                               'activation_timeout = abc\n')
        proc = self.run_cli('probe', '--config-file', conf)
        self.assertEqual(2, proc.returncode, proc.stderr)
        self.assertIn('activation_timeout', proc.stderr)
        self.assertNotIn('LocationInfo', proc.stderr)

    def test_version(self):
        proc = self.run_cli('--version')
        self.assertEqual(0, proc.returncode)
        self.assertRegex(proc.stdout.strip(), r'^\d+\.\d+\.\d+')

    def test_no_credentials_name_the_option(self):
        conf = os.path.join(self.tmp, 'noauth.conf')
        with open(conf, 'w') as f:
            f.write('[snapshot_ext_glance]\nendpoint_override = %s\n'
                    % self.glance.endpoint)
        proc = self.run_cli('snapshot', '--config-file', conf,
                            request_mod.SAMPLE_REQUEST)
        self.assertEqual(3, proc.returncode, proc.stderr)
        self.assertIn('Glance at %s' % self.glance.endpoint, proc.stderr)
        self.assertIn('no credentials were sent: set [snapshot_ext_glance] '
                      'auth_type', proc.stderr)
        with open(conf, 'w') as f:
            f.write('[snapshot_ext_glance]\nauth_type = admin_token\n'
                    'endpoint = %s\nendpoint_override = %s\n'
                    % (self.glance.endpoint, self.glance.endpoint))
        proc = self.run_cli('probe', '--config-file', conf)
        self.assertEqual(2, proc.returncode, proc.stderr)
        self.assertIn('auth_type admin_token gives no credentials: set '
                      '[snapshot_ext_glance] token', proc.stderr)

    def test_log_file_takes_the_logs_stderr_keeps_the_error(self):
        log = os.path.join(self.tmp, 'cli.log')
        conf = self.write_conf(endpoint='http://127.0.0.1:9')
        proc = self.run_cli('probe', '--config-file', conf, '--debug',
                            '--log-file', log)
        self.assertEqual(3, proc.returncode, proc.stderr)
        self.assertEqual(1, len(proc.stderr.strip().splitlines()),
                         proc.stderr)
        with open(log) as f:
            self.assertIn('GET http://127.0.0.1:9/versions', f.read())


class TestProbeNoHonestActivation(OperatorCLITestCase):
    """A Glance that allows no format the plugin can activate honestly."""

    GLANCE_OVERRIDES = {'identity': 'token', 'disk_formats': ('ami', 'ari')}

    def test_probe_is_exit_2_and_says_why(self):
        proc = self.run_cli('probe', '--config-file', self.write_conf())
        self.assertEqual(2, proc.returncode, proc.stderr)
        self.assertIn('(none: snapshots would be refused by preflight)',
                      proc.stdout)
        self.assertIn('Snapshots would be refused by preflight: none of '
                      'the formats tried', proc.stdout)
        proc = self.run_cli('probe', '--config-file', self.write_conf(),
                            '--format', 'json')
        self.assertEqual(2, proc.returncode, proc.stderr)
        info = json.loads(proc.stdout)
        self.assertEqual([], info['plan'])
        self.assertIn('is allowed by this Glance', info['refused'])
        self.assertNoImagesLeft(name_or_filter={'owner': self.project_id},
                                only_non_active=False)


class _Stall(http.server.BaseHTTPRequestHandler):
    """Answers nothing for a long time (a Glance that hangs)."""

    arrived = None
    #: Set at the test's cleanup: the handlers stop hanging at once.
    release = None

    def do_GET(self):  # noqa: N802 - http.server's API
        self.arrived.set()
        self.release.wait(60)

    def log_message(self, *args):
        pass


class TestSignals(testtools.TestCase):

    def test_sigterm_is_handled_like_ctrl_c(self):
        _Stall.arrived = threading.Event()
        _Stall.release = threading.Event()
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Stall)
        server.daemon_threads = True
        # server_close() would otherwise join the hanging handlers.
        server.block_on_close = False
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.addCleanup(_Stall.release.set)
        tmp = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(tmp, 'c.conf')
        endpoint = 'http://127.0.0.1:%d' % server.server_address[1]
        demo.write_config(conf, endpoint, 'u:p:member', 'libvirt')
        for sig, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
            _Stall.arrived.clear()
            proc = subprocess.Popen(
                [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'probe',
                 '--config-file', conf, '--format', 'json'],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                preexec_fn=test_faults.sigint_at_default)
            self.assertTrue(_Stall.arrived.wait(60))
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
            self.assertEqual(code, proc.returncode, err)
            self.assertEqual(code, json.loads(out)['exit_code'])
            self.assertNotIn('Traceback', err)


class _HoldUploads(http.server.BaseHTTPRequestHandler):
    """A reverse proxy to Glance that holds every image upload."""

    upstream = None
    held = None
    #: Set at the test's cleanup: held uploads stop hanging at once.
    release = None

    def _forward(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else None
        if self.command == 'PUT' and self.path.endswith('/file'):
            self.held.set()
            self.release.wait(60)
            return
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ('host', 'connection')}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status)
        for key, value in resp.getheaders():
            if key.lower() not in ('transfer-encoding', 'connection',
                                   'content-length'):
                self.send_header(key, value)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    def log_message(self, *args):
        pass


class TestInterruptedSnapshot(fbase.FunctionalTestCase):
    """SIGTERM in the middle of a snapshot is handled like Ctrl-C.

    An image whose upload was interrupted is left in place and named
    (another try of the snapshot, or this run's own upload still in
    flight, may be finishing it: doc/source/faults.rst); the same request
    run again adopts it and ends with it active, one image in all.
    """

    GLANCE_OVERRIDES = {'identity': 'token'}

    def test_sigterm_during_upload_names_the_image_a_retry_adopts(self):
        parsed = urllib.parse.urlsplit(self.glance.endpoint)
        _HoldUploads.upstream = (parsed.hostname, parsed.port)
        _HoldUploads.held = threading.Event()
        _HoldUploads.release = threading.Event()
        proxy = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                _HoldUploads)
        proxy.daemon_threads = True
        proxy.block_on_close = False
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        self.addCleanup(proxy.server_close)
        self.addCleanup(proxy.shutdown)
        self.addCleanup(_HoldUploads.release.set)
        tmp = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(tmp, 'c.conf')
        token = self.glance.token(self.project_id, self.user_id,
                                  roles=fbase.MEMBER_ROLES)
        demo.write_config(conf, 'http://127.0.0.1:%d'
                          % proxy.server_address[1], token, 'libvirt')
        data = base.sample_request_dict()
        data['server']['project_id'] = self.project_id
        data['requester']['project_id'] = self.project_id
        request = os.path.join(tmp, 'r.json')
        with open(request, 'w') as f:
            json.dump(data, f)
        proc = subprocess.Popen(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'snapshot',
             request, '--config-file', conf, '--format', 'json'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertTrue(_HoldUploads.held.wait(60), 'no upload arrived')
        self.assertEqual(1, len(self.list_all_images(
            filters={'owner': self.project_id})))
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=90)
        self.assertEqual(143, proc.returncode, err)
        answer = json.loads(out)
        self.assertEqual(143, answer['exit_code'])
        self.assertNotIn('Traceback', err)
        images = self.list_all_images(filters={'owner': self.project_id})
        self.assertEqual(1, len(images))
        left = images[0]['id']
        self.assertEqual('queued', images[0]['status'])
        self.assertEqual([left], answer['left'])
        self.assertIn('nothing was deleted', answer['error'])
        self.assertNotIn('cleaned up', answer['error'])
        self.assertIn(left, answer['error'])
        # The same request again, straight to Glance: it adopts the image.
        _HoldUploads.release.set()
        demo.write_config(conf, self.glance.endpoint, token, 'libvirt')
        retry = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'snapshot',
             request, '--config-file', conf, '--format', 'json'],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(0, retry.returncode, retry.stderr)
        self.assertEqual(left, json.loads(retry.stdout)['image']['id'])
        images = self.list_all_images(filters={'owner': self.project_id})
        self.assertEqual([(left, 'active')],
                         [(i['id'], i['status']) for i in images])
