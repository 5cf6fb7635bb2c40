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

"""Exactly once under faults: the fault x request-kind matrix (issue 9).

A :class:`~tests.functional.faultproxy.FaultProxy` sits between the plugin
and the embedded real Glance.  Each cell injects one fault into one kind of
request (``once`` or ``always``), runs ``nova-snapshot-ext snapshot`` (the
console script, in a subprocess) with the shipped request shape (no
``image_id``), default options and a short client timeout, then runs it
again without faults, as an operator's retry script would.  Each cell is
judged from Glance's own view, listed by a direct (un-proxied) admin
client:

* exit 0 => exactly one active image, the one reported;
* a failure => no active image (unless the run was interrupted by a
  signal while a request was in flight);
* any image left besides the reported one is named in the output;
* exit codes 0, 1 or 3 only (3: cannot reach Glance); never a traceback;
* after the retry: exactly one active image (no duplicate), and an image
  the first run reported is still that image (nothing good deleted).

The concurrency test runs 16 tries of one snapshot at once (threads, the
library) with random faults, several rounds: no duplicate, no deleted good
image, no unnamed leftover, no exception other than the product's.

``tox -e functional`` runs :data:`CORE` and one concurrency round;
``tox -e faults`` (``NOVA_SNAPSHOT_EXT_FAULTS=all``) runs every cell and
:data:`ROUNDS` rounds.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid

import fixtures
from testtools import content

from nova_snapshot_ext.embedded import demo
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import service as service_mod
from tests import base
from tests.functional import base as fbase
from tests.functional import faultproxy

#: ``[snapshot_ext_glance] timeout`` of every faulted run (seconds).
CLIENT_TIMEOUT = 3.0
#: A ``delay`` fault holds the request this long: past the timeout.
DELAY = CLIENT_TIMEOUT + 2.0
#: ``[snapshot_ext] request_timeout`` of every faulted run: a trickling
#: answer is cut here.
REQUEST_TIMEOUT = 6.0
#: ``[snapshot_ext] snapshot_timeout`` of every faulted run.
SNAPSHOT_TIMEOUT = 60.0
#: A trickling answer sends one byte this often (the issue's 0.5 s).
TRICKLE = 0.5
#: How long a run may take at most: its snapshot deadline, then a bounded
#: cleanup (a few reads and deletes, each within ``REQUEST_TIMEOUT``) and
#: the CLI's display read; the start of a Python process besides.
RUN_LIMIT = SNAPSHOT_TIMEOUT + 6 * REQUEST_TIMEOUT + 15
#: Environment variable that opts in to the whole matrix.
ALL_ENV = 'NOVA_SNAPSHOT_EXT_FAULTS'
#: Environment variable naming a file to append one JSON line per cell to.
LOG_ENV = 'NOVA_SNAPSHOT_EXT_FAULTS_LOG'
#: Environment variable overriding the first seed of the concurrency rounds
#: (to replay a reported seed, or to try others); round n uses seed + n.
SEED_ENV = 'NOVA_SNAPSHOT_EXT_FAULTS_SEED'
#: Allowed exit codes when a fault is injected (3: cannot reach Glance).
FAULT_EXIT_CODES = (0, 1, 3)

#: request kind -> (method, path regex, activation mode)
KINDS = {
    'create': ('POST', r'^/v2/images$', 'upload'),
    'upload': ('PUT', r'^/v2/images/[^/]+/file$', 'upload'),
    'get': ('GET', r'^/v2/images/[^/]+$', 'upload'),
    'delete': ('DELETE', r'^/v2/images/[^/]+$', 'upload'),
    'schema': ('GET', r'^/v2/schemas/image$', 'upload'),
    'versions': ('GET', r'^/versions$', 'location'),
    'stores': ('GET', r'^/v2/info/stores$', 'location'),
    'location': ('POST', r'^/v2/images/[^/]+/locations$', 'location'),
    'tasks': ('GET', r'^/v2/images/[^/]+/tasks$', 'location'),
}

#: fault name -> FaultProxy rule keyword arguments
FAULTS = {
    'reset_before': {'action': 'reset_before'},
    'reset_after': {'action': 'reset_after'},
    '503': {'action': 'status', 'status': 503},
    '502_after': {'action': 'status', 'status': 502, 'forward': True},
    '500': {'action': 'status', 'status': 500},
    'delay': {'action': 'delay', 'seconds': DELAY},
    'truncate': {'action': 'truncate'},
    'restart': {'action': 'restart'},
    # Issue 18: answers that prove nothing.  ``foreign``: the answer
    # carries another image's body (a queued image of the same project,
    # made by the cell); ``trickle``: one byte every half second;
    # ``answer_204``: an intermediary answers 204 without forwarding.
    'foreign': {'action': 'replace'},
    'trickle': {'action': 'trickle', 'seconds': TRICKLE},
    'answer_204': {'action': 'answer', 'status': 204},
}

TIMES = ('once', 'always')

#: Cells run by ``tox -e functional`` (each one a kind of the inputs
#: issue 9 names): (kind, fault, times, via).  ``via`` is ``'cli'`` (the
#: console script in a subprocess, as in the full matrix) or
#: ``'library'`` (``SnapshotService.snapshot`` in this process: the same
#: judgement, without a Python start per run).
CORE = (
    ('create', 'reset_after', 'once', 'cli'),
    ('create', 'delay', 'once', 'library'),
    ('upload', '503', 'once', 'library'),
    ('get', '503', 'once', 'cli'),
    ('schema', 'truncate', 'once', 'cli'),
    ('delete', '503', 'once', 'library'),
    ('versions', '503', 'once', 'library'),
    ('location', 'reset_after', 'once', 'library'),
    # issue 18
    ('create', 'foreign', 'once', 'library'),
    ('get', 'foreign', 'once', 'cli'),
    ('schema', 'trickle', 'once', 'cli'),
    ('upload', 'answer_204', 'once', 'cli'),
    ('versions', '500', 'once', 'library'),
)

#: Kinds of request the CLI is interrupted in (SIGINT, SIGTERM), while
#: the request is held in flight by the proxy.
SIGNAL_KINDS = ('create', 'upload')
#: Signal cells run in CI.
CORE_SIGNALS = (('create', signal.SIGINT),)

#: Concurrency: tries per round, rounds in the full run, fault share.
TRIES = 16
ROUNDS = 10
CORE_ROUNDS = 1
#: Rounds of 16 concurrent CLI processes (full run only).
CLI_ROUNDS = 2
RANDOM_PROBABILITY = 0.07


def _full_run():
    return os.environ.get(ALL_ENV, '').lower() in ('1', 'all', 'yes', 'true')


def sigint_at_default():
    """``preexec_fn`` of a CLI the test interrupts with SIGINT.

    A process started by a non-interactive shell's background job (the
    test runner, CI) inherits SIGINT ignored, and Python keeps it ignored:
    the CLI would never see the Ctrl-C.  An operator's Ctrl-C reaches a
    process whose SIGINT is at its default, which this restores.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def load_conf(config_files):
    """A private ConfigOpts from these files only, as the CLI reads them.

    :param config_files: paths of oslo.config ini files.
    :returns: a :class:`oslo_config.cfg.ConfigOpts`.
    """
    return base.private_conf(config_files)


def fresh_request_dict(project_id, user_id):
    """The shipped sample request, made unique to one snapshot operation.

    New server uuid and new volume snapshot ids (what makes a snapshot
    unique), no ``image_id`` (the shipped shape).
    """
    data = base.sample_request_dict()
    data.pop('image_id', None)
    data['name'] = 'faults-%s' % uuid.uuid4().hex[:12]
    server = data['server']
    server['uuid'] = str(uuid.uuid4())
    server['project_id'] = project_id
    server['user_id'] = user_id
    for mapping in data['block_device_mappings']:
        mapping['instance_uuid'] = server['uuid']
        if mapping.get('snapshot_id'):
            mapping['snapshot_id'] = str(uuid.uuid4())
        if mapping.get('volume_id'):
            mapping['volume_id'] = str(uuid.uuid4())
    data['requester'] = {'project_id': project_id, 'user_id': user_id,
                         'roles': list(fbase.MEMBER_ROLES)}
    return data


#: The deadlines of every faulted run (appended to its configuration).
DEADLINES = ('\n[snapshot_ext]\nrequest_timeout = %s\nsnapshot_timeout = %s\n'
             % (REQUEST_TIMEOUT, SNAPSHOT_TIMEOUT))


class FaultTestBase(fbase.FunctionalTestCase):
    """A fault proxy in front of an embedded Glance; config per mode."""

    GLANCE_PROFILE = 'http-store'
    GLANCE_OVERRIDES = {'identity': 'token'}
    DRIVER = 'libvirt'

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.proxy = self.useFixture(faultproxy.FaultProxyFixture(
            self.glance.endpoint, restart=self.glance.restart)).proxy
        self.location_format = demo.location_format_for(self.DRIVER)
        path = demo.LOCATION_PATH % self.location_format
        self.objects = demo.ObjectServer(
            {path: payloads.payload(self.location_format)}).start()
        self.addCleanup(self.objects.stop)
        self.location_url = self.objects.url(path)
        token = self.glance.token(self.project_id, self.user_id,
                                  roles=fbase.MEMBER_ROLES)
        self.conf_files = {}
        urls = {'upload': None, 'location': self.location_url}
        for mode, url in urls.items():
            path = os.path.join(self.tmp, '%s.conf' % mode)
            demo.write_config(path, self.proxy.endpoint, token, self.DRIVER,
                              url, self.location_format)
            with open(path, 'a', encoding='utf-8') as f:
                # a short client timeout; every other option default
                f.write('timeout = %s\n' % CLIENT_TIMEOUT)
                f.write(DEADLINES)
            self.conf_files[mode] = path

    def glance_view(self):
        """This test's images as Glance holds them (direct, un-proxied)."""
        return self.list_all_images(filters={'owner': self.project_id})

    def write_request(self, data):
        path = os.path.join(self.tmp, 'request-%s.json' % uuid.uuid4().hex)
        with open(path, 'w', encoding='utf-8') as f:
            json.dump(data, f)
        return path

    def run_cli(self, mode, request_path, interrupt=None):
        """Run ``nova-snapshot-ext snapshot --format json``.

        :param interrupt: ``(method, path regex, signal)``: send the signal
            once such a request arrived at the proxy (held there by a
            ``delay`` rule, so it is in flight).
        :returns: (CompletedProcess, the reported image id or None)
        """
        cmd = [sys.executable, '-m', 'nova_snapshot_ext.cmd.main',
               'snapshot', '--config-file', self.conf_files[mode],
               '--format', 'json', request_path]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              preexec_fn=sigint_at_default) as popen:
            if interrupt is not None:
                method, path, signum = interrupt
                if self.proxy.wait_arrival(method, path, 1, 120):
                    popen.send_signal(signum)
            try:
                out, err = popen.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                popen.kill()
                out, err = popen.communicate()
        proc = subprocess.CompletedProcess(cmd, popen.returncode, out, err)
        image_id = None
        if proc.returncode == 0:
            try:
                image_id = json.loads(proc.stdout)['result']['image_id']
            except (ValueError, KeyError, TypeError):
                image_id = None
        return proc, image_id

    def settle(self):
        """Let late (delayed, held) requests reach Glance first."""
        self.assertTrue(self.proxy.wait_idle(120),
                        'requests still in the fault proxy after 120 s')


class CellMixin(object):
    """One cell: fault one request kind, run, judge, retry, judge."""

    def foreign_image(self):
        """A queued image of this test's project that no run may touch.

        :returns: the image as Glance shows it (a dict, JSON-able).
        """
        client = self.client_for(roles=fbase.MEMBER_ROLES)
        image = client.images.create(
            name='foreign-%s' % uuid.uuid4().hex[:8], disk_format='raw',
            container_format='bare', visibility='private')
        return json.loads(json.dumps(dict(image), default=str))

    @staticmethod
    def foreign_problems(foreign, images):
        """What a run did to the foreign image (it must be as it was)."""
        now = [i for i in images if i['id'] == foreign['id']]
        if not now:
            return ['foreign_image_deleted']
        if now[0]['status'] != foreign['status'] or now[0].get(
                'size') != foreign.get('size'):
            return ['foreign_image_touched_%s' % now[0]['status']]
        return []

    def run_library(self, mode, request_path):
        """``SnapshotService.snapshot`` in-process, shaped like a CLI run.

        :returns: (CompletedProcess, the image id or None); exit status 0
            on success, 1 for a product error; a traceback in ``stderr``
            for any other exception.
        """
        out, err, code, image_id = '', '', 0, None
        try:
            conf = load_conf([self.conf_files[mode]])
            with open(request_path, encoding='utf-8') as f:
                req = request_mod.SnapshotRequest.from_dict(json.load(f))
            result = service_mod.SnapshotService(conf).snapshot(req)
            image_id = result.image_id
            out = json.dumps({'result': result.to_dict()}, default=str)
        except exception.SnapshotExtException as exc:
            failed = getattr(exc, 'result', None)
            code = 1
            out = json.dumps({'error': exc.format_message(),
                              'result': failed.to_dict() if failed
                              else None}, default=str)
        except Exception:
            code = 1
            err = traceback.format_exc()
        return subprocess.CompletedProcess(['library'], code, out,
                                           err), image_id

    def run_cell(self, kind, fault, times, signum=None, via='cli',
                 require_fired=False):
        method, path, mode = KINDS[kind]
        data = fresh_request_dict(self.project_id, self.user_id)
        request_path = self.write_request(data)
        if kind == 'delete':
            # A cleanup DELETE happens after a failed attempt: fail the
            # first upload so that there is one to fault.
            self.proxy.add_rule('PUT', KINDS['upload'][1], 'status',
                                status=500)
        if kind == 'tasks':
            # Tasks are read when a location attempt fails: the object
            # vanishes from the object server just before Glance is asked
            # to read it (the plugin's own check of the URL passed).
            objects = dict(self.objects.objects)
            self.addCleanup(self.objects.objects.update, objects)
            self.proxy.add_rule('POST', KINDS['location'][1], 'hook',
                                times='always',
                                hook=self.objects.objects.clear)
        foreign = None
        rule = dict(FAULTS[fault]) if fault is not None else {}
        if fault == 'foreign':
            # Another image of the same project, queued: the answer the
            # plugin gets is about it.
            foreign = self.foreign_image()
            rule['body'] = json.dumps(foreign).encode()
        if fault is not None:
            self.proxy.add_rule(method, path, times=times, **rule)

        started = time.monotonic()
        if via == 'library':
            proc, image_id = self.run_library(mode, request_path)
        else:
            proc, image_id = self.run_cli(
                mode, request_path,
                (method, path, signum) if signum is not None else None)
        ran = time.monotonic()
        self.settle()
        settled = time.monotonic()
        fired = self.proxy.count(method, path, fault=FAULTS[fault]['action']
                                 ) if fault is not None else 0
        self.proxy.clear()
        output = proc.stdout + proc.stderr
        first = self.glance_view()
        problems = []
        if foreign is not None:
            problems += self.foreign_problems(foreign, first)
            first = [i for i in first if i['id'] != foreign['id']]
        active = [i['id'] for i in first if i['status'] == 'active']
        name = ('%s/%s/%s' % (kind, fault, times) if fault
                else 'no-fault')
        if signum is not None:
            name = '%s/%s-in-flight' % (kind, signal.Signals(signum).name)
        if via != 'cli':
            name += '/' + via
        cell = {'cell': name,
                'fired': fired, 'exit': proc.returncode,
                'image_id': image_id,
                'images': [(i['id'], i['status']) for i in first]}
        if ran - started > RUN_LIMIT:
            problems.append('ran_%ds_past_its_deadline' % (ran - started))
        if require_fired and fault is not None and not fired:
            # a core cell is chosen to exercise its fault
            problems.append('fault_never_fired')
        if 'Traceback' in proc.stderr:
            problems.append('traceback')
        if proc.returncode not in FAULT_EXIT_CODES + (
                (128 + signum,) if signum else ()):
            problems.append('exit_code_%s' % proc.returncode)
        if proc.returncode == 0:
            if active != [image_id]:
                problems.append('success_not_exactly_the_reported_image')
        elif active and signum is None and not set(active) <= set(
                _left_in_place(proc.stdout)):
            # An interrupted run cannot know that a request it sent lands
            # later; naming the id (checked next) is all it can do.  Nor
            # can a run whose request met a transient fault: an image it
            # names as left in place (a request of its own still in
            # flight, or another try, may finish it) may turn active.
            problems.append('error_while_active')
        # A leftover (e.g. Glance refused every DELETE) must be named.
        if [i for i in first if i['id'] != image_id
                and i['id'] not in output]:
            problems.append('unnamed_leftover')

        # The operator's retry: same request, no faults.
        retry_started = time.monotonic()
        if kind == 'tasks':
            self.objects.objects.update(objects)
        run = self.run_library if via == 'library' else self.run_cli
        retry, retry_id = run(mode, request_path)
        self.settle()
        # durations, for the report only (nothing asserts on them)
        cell['seconds'] = [round(ran - started, 1), round(settled - ran, 1),
                           round(time.monotonic() - retry_started, 1)]
        routput = retry.stdout + retry.stderr
        images = self.glance_view()
        if foreign is not None:
            problems += ['retry_' + p for p in self.foreign_problems(
                foreign, images)]
            images = [i for i in images if i['id'] != foreign['id']]
        active = [i['id'] for i in images if i['status'] == 'active']
        cell.update({'retry_exit': retry.returncode, 'retry_id': retry_id,
                     'after_retry': [(i['id'], i['status'])
                                     for i in images]})
        if 'Traceback' in retry.stderr:
            problems.append('retry_traceback')
        if retry.returncode != 0:
            problems.append('retry_failed')
        if len(active) > 1:
            problems.append('duplicates_%d' % (len(active) - 1))
        if retry_id is not None and active != [retry_id]:
            problems.append('retry_not_the_active_image')
        if image_id is not None and image_id not in active:
            problems.append('deleted_good_image')
        if image_id is not None and retry_id is not None \
                and image_id != retry_id:
            problems.append('retry_did_not_converge')
        if [i for i in images if i['status'] != 'active'
                and i['id'] not in output + routput]:
            problems.append('unnamed_leftover_after_retry')
        cell['problems'] = problems
        self._log_cell(cell)
        if problems:
            self.fail('FAULTS cell %s: %s\n%s\nfirst run stdout (tail):\n%s'
                      '\nstderr (tail):\n%s\nretry stdout (tail):\n%s\n'
                      'retry stderr (tail):\n%s' % (
                          cell['cell'], ', '.join(problems),
                          json.dumps(cell), proc.stdout[-1500:],
                          proc.stderr[-1500:], retry.stdout[-1500:],
                          retry.stderr[-1500:]))

    @staticmethod
    def _log_cell(cell):
        """Append the cell's outcome to ``$NOVA_SNAPSHOT_EXT_FAULTS_LOG``."""
        path = os.environ.get(LOG_ENV)
        if path:
            with open(path, 'a', encoding='utf-8') as f:
                f.write(json.dumps(cell) + '\n')


def _signal_test(kind, signum):
    def test(self):
        self.run_cell(kind, 'delay', 'once', signum=signum,
                      require_fired=True)
    test.__name__ = 'test_%s_%s_in_flight' % (
        kind, signal.Signals(signum).name.lower())
    test.__doc__ = '%s while a %s request is in flight, then a retry.' % (
        signal.Signals(signum).name, kind)
    return test


def _cell_test(kind, fault, times, via='cli', core=False):
    def test(self):
        self.run_cell(kind, fault, times, via=via, require_fired=core)
    test.__name__ = 'test_%s_%s_%s%s' % (kind, fault, times,
                                         '' if via == 'cli' else '_' + via)
    test.__doc__ = '%s fault on %s requests, %s, then a clean retry (%s).' % (
        fault, kind, times, via)
    return test


def _left_in_place(stdout):
    """The ids a failed run's JSON report names as left in place."""
    try:
        result = json.loads(stdout).get('result') or {}
    except (ValueError, AttributeError):
        return []
    left = result.get('left_in_place') if isinstance(result, dict) else None
    return left if isinstance(left, list) else []


class TestVersionsCut(FaultTestBase):
    """GET /versions at connect answered with its body cut (twice)."""

    def test_a_cut_versions_answer_is_glance_failing(self):
        # Glance was reached (the status line and headers came): exit 1,
        # as any cut answer, never "could not be reached" (exit 3).
        self.proxy.add_rule('GET', r'^/versions$', 'truncate',
                            times='always')
        proc, _ = self.run_cli('upload', self.write_request(
            fresh_request_dict(self.project_id, self.user_id)))
        self.assertEqual(1, proc.returncode, proc.stderr)
        error = json.loads(proc.stdout)['error']
        self.assertIn('GET /versions', error)
        self.assertIn('Glance was reached but its answer was cut short',
                      error)
        self.assertNotIn('could not be reached', proc.stderr)
        self.assertGreaterEqual(self.proxy.count('GET', r'^/versions$'), 2)
        self.assertEqual(0, self.proxy.count('POST', r'^/v2/images$'))
        self.assertEqual([], self.glance_view())


class TestFaultCore(FaultTestBase, CellMixin):
    """The core cells, run in CI."""

    def test_no_fault_then_retry(self):
        """Without any fault, the retry converges on the first image."""
        self.run_cell('create', None, None, via='library')


class TestFaultMatrix(FaultTestBase, CellMixin):
    """Every cell (CLI); loaded only with ``NOVA_SNAPSHOT_EXT_FAULTS=all``."""


for _kind in KINDS:
    for _fault in FAULTS:
        for _times in TIMES:
            _test = _cell_test(_kind, _fault, _times)
            setattr(TestFaultMatrix, _test.__name__, _test)
for _cell in CORE:
    _test = _cell_test(*_cell, core=True)
    setattr(TestFaultCore, _test.__name__, _test)
for _kind in SIGNAL_KINDS:
    for _signum in (signal.SIGINT, signal.SIGTERM):
        _test = _signal_test(_kind, _signum)
        setattr(TestFaultCore if (_kind, _signum) in CORE_SIGNALS
                else TestFaultMatrix, _test.__name__, _test)


class _Outcome(object):
    def __init__(self):
        self.image_id = None
        self.error = None
        self.text = ''
        self.unexpected = None


class TestConcurrentTries(FaultTestBase):
    """16 tries of one snapshot at once, random faults, several rounds."""

    #: Chance that one request through a proxy is faulted.
    FAULT_PROBABILITY = RANDOM_PROBABILITY

    def round_nodes(self):
        """The glance-api nodes of a round: ``[(proxy, conf file)]``.

        Try ``n`` goes through node ``n % len(nodes)``; the operator's
        retry through the first.  One node here.
        """
        return [(self.proxy, self.conf_files['upload'])]

    def one_try(self, conf_file, data, outcome):
        try:
            conf = load_conf([conf_file])
            req = request_mod.SnapshotRequest.from_dict(data)
            result = service_mod.SnapshotService(conf).snapshot(req)
            outcome.image_id = result.image_id
            outcome.text = json.dumps(result.to_dict(), default=str)
        except exception.SnapshotExtException as err:
            outcome.error = err
            failed = getattr(err, 'result', None)
            outcome.text = str(err) + json.dumps(
                failed.to_dict() if failed else None, default=str)
        except Exception as err:  # judged below: a "traceback"
            outcome.unexpected = err
            outcome.text = repr(err)

    def one_cli_try(self, conf_file, data, outcome):
        """One try as a separate ``nova-snapshot-ext snapshot`` process."""
        proc, image_id = self.run_cli('upload', self._request_file)
        outcome.image_id = image_id
        outcome.text = proc.stdout + proc.stderr
        if 'Traceback' in proc.stderr or proc.returncode not in (
                FAULT_EXIT_CODES):
            outcome.unexpected = 'exit %s: %s' % (proc.returncode,
                                                  proc.stderr[-2000:])
        elif proc.returncode:
            outcome.error = proc.returncode

    def run_round(self, seed, try_=None):
        try_ = try_ or self.one_try
        data = fresh_request_dict(self.project_id, self.user_id)
        self._request_file = self.write_request(data)
        nodes = self.round_nodes()
        for number, (proxy, _) in enumerate(nodes):
            # node 0 keeps the seed a reported round names
            proxy.random_faults(seed + 1000 * number, self.FAULT_PROBABILITY,
                                actions=('reset_before', 'reset_after',
                                         'status', 'truncate'))
        outcomes = [_Outcome() for _ in range(TRIES)]
        threads = [threading.Thread(target=try_, args=(
            nodes[n % len(nodes)][1], data, outcome))
            for n, outcome in enumerate(outcomes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
        for proxy, _ in nodes:
            self.assertTrue(proxy.wait_idle(120), 'requests still in a '
                            'fault proxy after 120 s')
        faults_by_node = [len(proxy.faults()) for proxy, _ in nodes]
        faults = sum(faults_by_node)
        for proxy, _ in nodes:
            proxy.clear()
        # The operator's retry, without faults, must converge.
        retry = _Outcome()
        self.one_try(self.conf_files['upload'], data, retry)
        self.settle()
        images = {i['id']: i for i in self.glance_view()}
        active = [i for i in images.values() if i['status'] == 'active']
        good = {o.image_id for o in outcomes if o.image_id}
        text = ' '.join(o.text for o in outcomes + [retry])
        counts = {
            'seed': seed,
            'faults': faults,
            'faults_by_node': faults_by_node,
            'ok': sum(1 for o in outcomes if o.image_id),
            'failed': sum(1 for o in outcomes if o.error),
            'duplicates': max(0, len(active) - 1),
            'deleted_good': len([i for i in good if i not in images or
                                 images[i]['status'] != 'active']),
            'unnamed_leftovers': len([i for i in images.values()
                                      if i['status'] != 'active'
                                      and i['id'] not in text]),
            'tracebacks': sum(1 for o in outcomes if o.unexpected),
            'distinct_reported': len(good),
            'images': sorted((i['id'], i['status'])
                             for i in images.values()),
            'tries': [o.image_id or 'error: %.300s' % (
                o.error or o.unexpected) for o in outcomes],
            'retry_converged': bool(
                retry.image_id and [i['id'] for i in active] ==
                [retry.image_id] and good <= {retry.image_id}),
        }
        return counts, outcomes

    def test_concurrent_tries_random_faults(self):
        self.run_rounds(ROUNDS if _full_run() else CORE_ROUNDS, 9000,
                        'library', self.one_try)

    def setUp_confs(self):
        self.write_round_conf(self.conf_files['upload'], self.proxy.endpoint)

    def write_round_conf(self, path, endpoint):
        """Write the upload-mode configuration of this round's project.

        :param path: the file to (re)write.
        :param endpoint: the Glance (or fault proxy) URL it names.
        """
        token = self.glance.token(self.project_id, self.user_id,
                                  roles=fbase.MEMBER_ROLES)
        demo.write_config(path, endpoint, token, self.DRIVER)
        with open(path, 'a', encoding='utf-8') as f:
            f.write('timeout = %s\n' % CLIENT_TIMEOUT)
            f.write(DEADLINES)

    def run_rounds(self, rounds, seed, via, try_):
        """Run and judge ``rounds`` rounds; return their counts (dicts)."""
        seed = int(os.environ.get(SEED_ENV) or seed)
        results = []
        for n in range(rounds):
            # a fresh project per round: Glance's view is per round
            self.project_id = self.new_project()
            self.setUp_confs()
            counts, outcomes = self.run_round(seed + n, try_)
            results.append(counts)
            CellMixin._log_cell(dict(counts, round=n, via=via))
            unexpected = [repr(o.unexpected) for o in outcomes
                          if o.unexpected]
            self.addDetail('round-%d' % n, content.text_content(
                json.dumps(counts) + '\n' + '\n'.join(unexpected)))
        print(json.dumps(results))
        for counts in results:
            self.assertEqual(
                (0, 0, 0, 0),
                (counts['duplicates'], counts['deleted_good'],
                 counts['unnamed_leftovers'], counts['tracebacks']),
                json.dumps(results))
            self.assertLessEqual(counts['distinct_reported'], 1,
                                 json.dumps(results))
            self.assertTrue(counts['retry_converged'], json.dumps(results))
        return results


class TestConcurrentProcesses(TestConcurrentTries):
    """16 CLI processes at once; only with ``NOVA_SNAPSHOT_EXT_FAULTS``."""

    def test_concurrent_tries_random_faults(self):
        self.run_rounds(CLI_ROUNDS, 9100, 'cli', self.one_cli_try)


def load_tests(loader, standard_tests, pattern):
    """Leave the full matrix out unless ``NOVA_SNAPSHOT_EXT_FAULTS=all``."""
    suite = loader.suiteClass()
    for cls in (TestFaultCore, TestConcurrentTries, TestVersionsCut):
        suite.addTests(loader.loadTestsFromTestCase(cls))
    if _full_run():
        suite.addTests(loader.loadTestsFromTestCase(TestFaultMatrix))
        suite.addTests(loader.loadTestsFromTestCase(TestConcurrentProcesses))
    return suite
