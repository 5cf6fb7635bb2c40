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

"""Start and stop the whole cloud: :class:`Cloud`.

Order: MariaDB and RabbitMQ, the network stand-in, Keystone, Placement,
Glance (:class:`~nova_snapshot_ext.embedded.glance.EmbeddedGlance`),
Cinder (api, scheduler, volume), Nova (api, scheduler, conductor,
compute), then ``cell_v2 discover_hosts``, flavors, quotas and an image.

Cells v2 as devstack lays them out: nova-api (and nova-scheduler) read a
``nova.conf`` whose ``[database]`` is cell0; the conductor and
nova-compute read the cell's ``nova.conf`` whose ``[database]`` is cell1;
servers live in cell1.

The first start migrates every database and bootstraps Keystone, then
keeps a copy of MariaDB's data directory and Keystone's key repositories
as a *template* beside the virtualenv (``<cache>/cloud-<key>-template``);
later starts copy it and only rewrite what holds ports and paths (the
catalog's endpoints, the cell mappings).
"""

import json
import os
import shutil
import sys
import tempfile
import time

from oslo_log import log as logging

from nova_snapshot_ext.embedded.cloud import config
from nova_snapshot_ext.embedded.cloud import debian
from nova_snapshot_ext.embedded.cloud import infra
from nova_snapshot_ext.embedded.cloud import realstack
from nova_snapshot_ext.embedded.cloud import venv
from nova_snapshot_ext.embedded import demo as embedded_demo
from nova_snapshot_ext.embedded import glance as glance_mod
from nova_snapshot_ext.embedded import glance_venv
from nova_snapshot_ext.embedded import keystone as keystone_mod
from nova_snapshot_ext.embedded import logs
from nova_snapshot_ext.embedded import process as proc_mod
from nova_snapshot_ext.image import payloads

LOG = logging.getLogger(__name__)

CloudError = proc_mod.CloudError

#: Bumped whenever what the template holds changes.
TEMPLATE_VERSION = 1
PASSWORD = keystone_mod.PASSWORD
REGION = 'RegionOne'
START_TIMEOUT = 180.0
COMPUTE_TIMEOUT = 180.0
#: Service users: admin and service on the ``service`` project.
SERVICE_USERS = ('nova', 'cinder', 'glance', 'placement')
#: Users of the ``demo`` project and their role there.
DEMO_USERS = (('demo', 'member'), ('demo_admin', 'admin'))
#: Flavors made on every start (name, ram MiB, vcpus, disk GiB).
FLAVORS = (('cloud.tiny', 256, 1, 1), ('cloud.small', 512, 1, 2))
#: Databases on MariaDB.
DATABASES = ('keystone', 'placement', 'cinder', 'nova_api', 'nova_cell0',
             'nova_cell1')
VIRT_MODULE = 'snapshot_ext_fake'
COMPUTE_DRIVER = VIRT_MODULE + '.SnapshotExtFakeDriver'
CINDER_DRIVER = ('nova_snapshot_ext.embedded.cloud.cinder_driver.'
                 'CloneReportingVolumeDriver')
#: Profiles: keyword arguments of the embedded Glance (as ``serve``).
PROFILES = glance_mod.PROFILES
#: ``[snapshot_ext] activation_method`` values the cloud can run.
ACTIVATIONS = ('upload', 'location-first', 'location-fallback')
#: ``stack`` values: the fake drivers, or Ceph and libvirt/QEMU.
STACKS = realstack.STACKS
GLANCE_STORES = realstack.GLANCE_STORES

_KEYSTONE_WSGI = """\
# Written by nova_snapshot_ext.embedded.cloud.
import sys

sys.argv = sys.argv[:1]

from keystone.wsgi.api import application  # noqa: E402,F401
"""
_NOVA_WSGI = """\
# Written by nova_snapshot_ext.embedded.cloud.
import sys

sys.argv = sys.argv[:1]

from nova.wsgi.osapi_compute import application  # noqa: E402,F401
"""
_CINDER_WSGI = """\
# Written by nova_snapshot_ext.embedded.cloud.
import sys

sys.argv = sys.argv[:1] + ['--config-file', %r]

from cinder.wsgi.api import application  # noqa: E402,F401
"""
_KEY_DIRS = ('fernet-keys', 'credential-keys', 'receipt-keys')
#: What each start step does (``progress``), by its :attr:`timings` name.
STEP_WORDS = {
    'plugin': 'this checkout into the virtualenv (when it changed)',
    'mariadb': 'MariaDB',
    'rabbitmq': 'RabbitMQ',
    'guest': 'the marker guest\'s disk (built once per kernel)',
    'ceph_libvirt': 'Ceph and libvirtd (the first libvirtd probes QEMU '
                    'for about 8 s)',
    'migrate': 'every database migrated and Keystone bootstrapped (the '
               'first start only: a minute or two)',
    'template': 'a copy of the migrated databases, for later starts',
    'rewrite': 'the template\'s endpoints and cells pointed at this start',
    'keystone': 'Keystone', 'placement': 'Placement', 'glance': 'Glance',
    'cinder': 'Cinder', 'nova': 'Nova (api, scheduler, conductor, compute)',
    'discover': 'nova-compute registered and mapped to its cell',
    'resources': 'flavors, quotas and images',
}


def system_tempdir():
    """The system temporary directory (not a test's NestedTempfile)."""
    from nova_snapshot_ext.embedded import database

    return database.system_tempdir()


def template_dir():
    """Where the migrated template lives (beside the virtualenv)."""
    return venv.template_dir()


class _GlanceKeystone(object):
    """What EmbeddedGlance's ``identity='keystone'`` reads from Keystone."""

    def __init__(self, url):
        self.url = url

    def glance_options(self):
        section = {'auth_url': self.url, 'auth_type': 'password',
                   'username': 'glance', 'password': PASSWORD,
                   'user_domain_id': 'default', 'project_name': 'service',
                   'project_domain_id': 'default',
                   'www_authenticate_uri': self.url,
                   'service_token_roles_required': 'true'}
        return {'keystone_authtoken': section}


class Cloud(object):
    """The cloud in a box.

    :param profile: a Glance profile name (:data:`PROFILES`), e.g.
        ``'default'`` or ``'no-raw'`` (Glance without ``raw``).
    :param plugin: install the paste filter into nova-api (False: stock
        Nova, for comparisons).
    :param keep: keep the directory after :meth:`stop` (it is always kept
        when :meth:`start` fails, and its path printed).
    :param use_template: start from the migrated template when there is
        one (and make one after a cold start).
    :param activation: the plugin's ``[snapshot_ext] activation_method``
        (:data:`ACTIVATIONS`).  With a location mode the cloud serves the
        plugin's valid empty ``qcow2`` image on 127.0.0.1 (a thread of
        this process: the location object, a stand-in for a web server)
        as ``location_url``, and Glance gets its ``http`` store.
    :param nova_glance_port: when set, nova-api reaches Glance at
        ``http://127.0.0.1:<port>`` (``[glance] api_servers``) instead of
        Glance's own port: the caller serves a proxy there (e.g. a fault
        proxy in front of :attr:`glance`).
    :param stack: ``'fake'`` (Cinder's and Nova's fake drivers: no byte
        stored, no guest run) or ``'real'`` (Ceph RBD and libvirt/QEMU,
        :mod:`.realstack`; the marker guest's image is uploaded as
        ``ids['images']['guest']``).
    :param glance_store: ``'file'`` or, on the real stack, ``'rbd'``.
    :param progress: called with one line of text as each step of the
        start begins (``serve --cloud`` prints them), or None.
    """

    def __init__(self, profile='default', plugin=True, keep=False,
                 use_template=True, activation='upload',
                 nova_glance_port=None, stack='fake', glance_store='file',
                 progress=None):
        if profile not in PROFILES:
            raise KeyError('unknown profile %r (known: %s)' % (
                profile, ', '.join(sorted(PROFILES))))
        if activation not in ACTIVATIONS:
            raise KeyError('unknown activation %r (known: %s)' % (
                activation, ', '.join(ACTIVATIONS)))
        if stack not in STACKS:
            raise KeyError('unknown stack %r (known: %s)' % (
                stack, ', '.join(STACKS)))
        if glance_store not in GLANCE_STORES:
            raise KeyError('unknown Glance store %r (known: %s)' % (
                glance_store, ', '.join(GLANCE_STORES)))
        if glance_store != 'file' and stack != 'real':
            raise KeyError('the Glance store %r needs the real stack (Ceph)'
                           % glance_store)
        self.stack = stack
        self.glance_store = glance_store
        self._progress = progress
        self.real = None
        self.profile = profile
        self.plugin = plugin
        self.activation = activation
        self.nova_glance_port = nova_glance_port
        self.objects = None
        self.keep = keep
        self.use_template = use_template
        self.base_dir = None
        self.procs = None
        self.python = None
        self.ports = {}
        self.mariadb = None
        self.rabbit = None
        self.glance = None
        self.ids = {}
        self.timings = {}
        self.warm = False
        self.tempest_conf = None
        self.plugin_conf = None
        self._watchdog = None

    # ------------------------------------------------------------------
    # urls

    def url(self, name):
        """The URL of a service.

        :param name: keystone, glance, cinder, placement, nova, network.
        """
        if name == 'glance':
            return self.glance.endpoint
        paths = {'keystone': '/v3', 'cinder': '/v3', 'placement': '',
                 'nova': '/v2.1', 'network': ''}
        return 'http://127.0.0.1:%d%s' % (self.ports[name], paths[name])

    @property
    def running(self):
        """Whether any process of the cloud runs now."""
        return self.procs is not None and bool(self.procs.pids())

    @property
    def keystone_url(self):
        return self.url('keystone')

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc_value, tb):
        self.stop()

    # ------------------------------------------------------------------
    # start / stop

    def start(self):
        """Bring the whole cloud up (bounded waits throughout).

        :returns: self
        :raises CloudError: if a piece fails; everything started is
            stopped and the directory (logs) kept, its path in the message.
        :raises KeyboardInterrupt: (or another ``BaseException``) as it
            came; everything started is stopped and :meth:`stop` removes
            the directory.
        """
        started = time.monotonic()
        self.require_host()
        self.base_dir = tempfile.mkdtemp(prefix='nova-snapshot-ext-cloud-',
                                         dir=system_tempdir())
        self.procs = proc_mod.Processes(self.base_dir)
        try:
            self._start()
        except BaseException as exc:
            # A failure keeps its logs (stop() then leaves the directory);
            # an interrupt (Ctrl-C, a signal) is the caller's choice to
            # stop, and stop() removes everything as after a run.
            if isinstance(exc, Exception):
                self.keep = True
            self.procs.stop_all()
            self._stop_in_process()
            if self.real is not None:
                self.real.cleanup()
            if isinstance(exc, Exception):
                raise CloudError('the cloud did not start (%s); logs kept '
                                 'in %s' % (exc, self.base_dir)) from exc
            raise
        self.timings['start'] = round(time.monotonic() - started, 1)
        LOG.info('cloud up in %.1f s (%s), directory %s',
                 self.timings['start'], 'warm' if self.warm else 'cold',
                 self.base_dir)
        return self

    def require_host(self):
        """Refuse before anything starts when a Debian package is missing.

        :raises CloudError: naming the packages and the command that
            installs them (:func:`.debian.require`).
        """
        debian.require(self.stack)

    def stop(self):
        """Stop every process (by PID and process group).

        The directory is removed unless ``keep`` or the start failed
        (idempotent).

        :returns: None
        """
        if self.procs is not None:
            self.procs.stop_all()
        self._stop_in_process()
        if self.real is not None:
            self.real.cleanup()
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.kill()
            watchdog.wait()
        if self.base_dir and not self.keep:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def _stop_in_process(self):
        """Stop Glance and the location object server (idempotent)."""
        if self.glance is not None:
            self.glance.stop()
            self.glance = None
        if self.objects is not None:
            self.objects.stop()
            self.objects = None

    def _step(self, name, func, *args):
        if self._progress is not None:
            self._progress(self._step_words(name))
        t = time.monotonic()
        result = func(*args)
        self.timings[name] = round(time.monotonic() - t, 1)
        return result

    def _step_words(self, name):
        """What the step ``name`` does, for a person waiting on it."""
        if name == 'venv':
            return ('the services\' virtualenv (the first time pip installs '
                    'about 600 MB: minutes; log %s.log)'
                    % glance_venv.release_dir(venv.release()))
        return STEP_WORDS.get(name, name)

    def _start(self):
        self.python = self._step('venv', venv.ensure)
        self._step('plugin', venv.ensure_plugin, self.python)
        self._install_virt_driver()
        names = ('keystone', 'placement', 'cinder', 'nova', 'network',
                 'glance', 'mysql', 'rabbit', 'rabbit_dist', 'epmd',
                 'objects', 'ceph_v2', 'ceph_v1', 'libvirt')
        taken = (self.nova_glance_port,) if self.nova_glance_port else ()
        self.ports = dict(zip(names, proc_mod.free_ports(len(names),
                                                         taken=taken)))
        self._watchdog = proc_mod.start_watchdog(self.base_dir,
                                                 self.ports['epmd'])
        tmpl = template_dir()
        record = _read_template(tmpl) if self.use_template else None
        self.warm = record is not None
        self.mariadb = infra.MariaDB(self.procs, self.base_dir,
                                     self.ports['mysql'])
        if self.warm:
            self.mariadb.copy_from(os.path.join(tmpl, 'mysql'))
        else:
            self.mariadb.install()
        self._step('mariadb', self.mariadb.start)
        self.rabbit = infra.RabbitMQ(self.procs, self.base_dir,
                                     self.ports['rabbit'],
                                     self.ports['rabbit_dist'],
                                     self.ports['epmd'])
        self._step('rabbitmq', self.rabbit.start)
        if self.stack == 'real':
            self.real = realstack.RealStack(self.procs, self.base_dir,
                                            self.ports, self.glance_store)
            self._step('guest', self.real.prepare, self.python)
            self._step('ceph_libvirt', self.real.start)
        self._start_network()
        self._start_objects()
        self._write_configs()
        if self.warm:
            for sub in _KEY_DIRS:
                shutil.copytree(os.path.join(tmpl, sub),
                                os.path.join(self.base_dir, 'keystone', sub))
            self.ids = record['ids']
            self._step('rewrite', self._rewrite_template_urls)
            self._step('keystone', self._start_keystone)
        else:
            self._step('migrate', self._cold_prepare)
            if self.use_template:
                self._step('template', self._save_template, tmpl)
            self._step('keystone', self._start_keystone)
        self._step('placement', self._start_placement)
        self._step('glance', self._start_glance)
        self._step('cinder', self._start_cinder)
        self._step('nova', self._start_nova)
        self._step('discover', self._discover_compute)
        self._step('resources', self._make_resources)
        self.tempest_conf = self.write_tempest_conf()
        self.plugin_conf = self.write_plugin_conf()

    # ------------------------------------------------------------------
    # pieces

    def _env(self, **extra):
        env = dict(os.environ)
        for key in ('PYTHONPATH', 'VIRTUAL_ENV', 'OS_AUTH_URL', 'OS_CLOUD',
                    'OS_NOVA_CONFIG_DIR', 'OS_NOVA_CONFIG_FILES'):
            env.pop(key, None)
        env['PYTHONUNBUFFERED'] = '1'
        env['PATH'] = os.path.dirname(self.python) + os.pathsep + \
            env.get('PATH', '')
        if self.real is not None:
            env['PATH'] = self.real.path_prefix() + os.pathsep + env['PATH']
        env.update(extra)
        return env

    def _bin(self, name):
        return os.path.join(os.path.dirname(self.python), name)

    def _dir(self, name):
        path = os.path.join(self.base_dir, name)
        os.makedirs(path, exist_ok=True)
        return path

    def _install_virt_driver(self):
        """Copy our fake driver into the venv's nova.virt (see module)."""
        site = _site_packages(self.python)
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'virt_driver.py')
        dst = os.path.join(site, 'nova', 'virt', VIRT_MODULE + '.py')
        with open(src, 'rb') as fh:
            data = fh.read()
        try:
            with open(dst, 'rb') as fh:
                if fh.read() == data:
                    return
        except OSError:
            pass
        with open(dst + '.tmp', 'wb') as fh:
            fh.write(data)
        os.replace(dst + '.tmp', dst)

    def _gunicorn(self, name, port, app, directory, env, threads=4,
                  pythonpath=None):
        cmd = proc_mod.gunicorn_command(
            self.python, app, '127.0.0.1:%d' % port,
            'cloud-%s-%d' % (name, port), directory, threads=threads,
            pythonpath=pythonpath)
        return self.procs.start(name, cmd, env=env, cwd=directory)

    def _wait_http(self, service, url, what=None, timeout=START_TIMEOUT):
        def ready():
            if proc_mod.http_ok(url):
                return True
            # gunicorn restarts a worker that cannot load the app forever:
            # give up after a few.
            if logs.tail(service.log, 400).count(
                    'Worker (pid:') >= 3:
                raise CloudError('%s: its workers keep exiting; log %s:\n%s'
                                 % (service.name, service.log,
                                    logs.tail(service.log)))
            return False

        self.procs.wait(service, ready,
                        what or '%s answering at %s' % (service.name, url),
                        timeout)

    def _start_network(self):
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'network.py')
        service = self.procs.start(
            'network', [self.python, src, str(self.ports['network'])],
            env=self._env())
        self._wait_http(service, self.url('network') + '/')

    def _db(self, name):
        return ('mysql+pymysql://root@localhost/%s?unix_socket=%s'
                '&charset=utf8' % (name, self.mariadb.socket))

    def _write_configs(self):
        transport = self.rabbit.url()
        kurl = self.keystone_url
        kdir = self._dir('keystone')
        with open(os.path.join(kdir, 'keystone.conf'), 'w') as fh:
            fh.write(config.keystone_conf(kdir, self._db('keystone')))
        with open(os.path.join(kdir, 'embedded_keystone_wsgi.py'),
                  'w') as fh:
            fh.write(_KEYSTONE_WSGI)
        pdir = self._dir('placement')
        with open(os.path.join(pdir, 'placement.conf'), 'w') as fh:
            fh.write(config.placement_conf(self._db('placement'), kurl,
                                           PASSWORD))
        cdir = self._dir('cinder')
        for sub in ('volumes', 'locks', 'coordination'):
            self._dir(os.path.join('cinder', sub))
        venv_root = os.path.dirname(os.path.dirname(self.python))
        for name in ('api-paste.ini', 'resource_filters.json'):
            shutil.copyfile(os.path.join(venv_root, 'etc', 'cinder', name),
                            os.path.join(cdir, name))
        with open(os.path.join(cdir, 'cinder.conf'), 'w') as fh:
            fh.write(config.cinder_conf(
                cdir, self._db('cinder'), transport, kurl, PASSWORD,
                CINDER_DRIVER, backend=(self.real.cinder_backend()
                                        if self.real else None)))
        with open(os.path.join(cdir, 'embedded_cinder_wsgi.py'), 'w') as fh:
            fh.write(_CINDER_WSGI % os.path.join(cdir, 'cinder.conf'))
        # The Glance URL is known once Glance runs: Nova's configs are
        # written in _start_nova.

    def _nova_confs(self):
        transport = self.rabbit.url()
        kurl = self.keystone_url
        snapshot_ext = None
        if self.plugin:
            # [snapshot_ext_nova] defaults (reuse Nova's [glance]
            # settings, as nova.rst describes); the fake compute driver
            # is stamped nothing.
            # Backups of volume-backed servers too (doc/source/backups.rst:
            # off by default, then Nova's 400 is unchanged).
            # On the real stack, the libvirt driver as an operator of a
            # libvirt cloud sets it (it reads Nova's [libvirt] virt_type).
            snapshot_ext = {'snapshot_ext': {
                'driver': 'libvirt' if self.real else 'fake',
                'volume_backed_backups': True}}
            if self.location_url is not None:
                snapshot_ext['snapshot_ext'].update(
                    activation_method=self.activation,
                    location_url=self.location_url,
                    location_disk_format=embedded_demo.LOCATION_FORMAT)
        api_dir = self._dir('nova-api')
        cell_dir = self._dir('nova-cell1')
        for d in (api_dir, cell_dir):
            self._dir(os.path.join(d, 'locks'))
            self._dir(os.path.join(d, 'instances'))
        glance_url = self.glance.endpoint if self.glance else \
            'http://127.0.0.1:9'
        api_glance_url = glance_url
        if self.nova_glance_port:
            api_glance_url = 'http://127.0.0.1:%d' % self.nova_glance_port
        with open(os.path.join(api_dir, 'nova.conf'), 'w') as fh:
            fh.write(config.nova_conf(
                api_dir, self._db('nova_cell0'), self._db('nova_api'),
                transport, kurl, PASSWORD, api_glance_url,
                snapshot_ext=snapshot_ext,
                extra=self.real.nova_api_options() if self.real else None))
        with open(os.path.join(cell_dir, 'nova.conf'), 'w') as fh:
            fh.write(config.nova_conf(
                cell_dir, self._db('nova_cell1'), self._db('nova_api'),
                transport, kurl, PASSWORD, glance_url))
        with open(os.path.join(cell_dir, 'nova-cpu.conf'), 'w') as fh:
            fh.write(config.nova_conf(
                cell_dir, self._db('nova_cell1'), None,
                transport, kurl, PASSWORD, glance_url,
                compute_driver=COMPUTE_DRIVER,
                extra=self.real.nova_compute_options() if self.real
                else None))
        with open(os.path.join(api_dir, 'embedded_nova_wsgi.py'), 'w') as fh:
            fh.write(_NOVA_WSGI)
        venv_root = os.path.dirname(os.path.dirname(self.python))
        stock = os.path.join(venv_root, 'etc', 'nova', 'api-paste.ini')
        paste = os.path.join(api_dir, 'api-paste.ini')
        if self.plugin:
            # The one edit every recipe makes (doc/source/nova.rst), by
            # the command nova-api's environment now has.
            self.procs.run('nova-snapshot-ext-paste', [
                self._bin('nova-snapshot-ext'), 'paste', '--from', stock,
                '--output', paste], env=self._env(), cwd=api_dir)
        else:
            shutil.copyfile(stock, paste)
        return api_dir, cell_dir

    def _keystone_env(self):
        return self._env(
            OS_KEYSTONE_CONFIG_DIR=os.path.join(self.base_dir, 'keystone'),
            OS_KEYSTONE_CONFIG_FILES='keystone.conf')

    def _keystone_manage(self, *args):
        kdir = os.path.join(self.base_dir, 'keystone')
        self.procs.run('keystone-manage', [
            self._bin('keystone-manage'), '--config-file',
            os.path.join(kdir, 'keystone.conf')] + list(args),
            env=self._keystone_env(), cwd=kdir)

    def _start_keystone(self):
        kdir = os.path.join(self.base_dir, 'keystone')
        service = self._gunicorn('keystone', self.ports['keystone'],
                                 'embedded_keystone_wsgi:application', kdir,
                                 self._keystone_env(), pythonpath=kdir)
        self._wait_http(service, self.keystone_url)

    def _cold_prepare(self):
        """Migrate every database and bootstrap Keystone (first start)."""
        for name in DATABASES:
            self.mariadb.sql('CREATE DATABASE `%s` CHARACTER SET utf8'
                             % name)
        self._keystone_manage('db_sync')
        for setup in ('fernet_setup', 'credential_setup'):
            self._keystone_manage(setup, '--keystone-user', 'root',
                                  '--keystone-group', 'root')
        self._keystone_manage(
            'bootstrap', '--bootstrap-password', PASSWORD,
            '--bootstrap-region-id', REGION,
            '--bootstrap-admin-url', self.keystone_url,
            '--bootstrap-public-url', self.keystone_url,
            '--bootstrap-internal-url', self.keystone_url)
        self._start_keystone()
        self.ids = self._seed_keystone()
        ks = [s for s in self.procs.services if s.name == 'keystone']
        for service in ks:
            service.stop()
            self.procs.services.remove(service)
        pdir = os.path.join(self.base_dir, 'placement')
        self.procs.run('placement-manage', [
            self._bin('placement-manage'), '--config-file',
            os.path.join(pdir, 'placement.conf'), 'db', 'sync'],
            env=self._env(), cwd=pdir)
        cdir = os.path.join(self.base_dir, 'cinder')
        self.procs.run('cinder-manage', [
            self._bin('cinder-manage'), '--config-file',
            os.path.join(cdir, 'cinder.conf'), 'db', 'sync'],
            env=self._env(), cwd=cdir)
        api_dir, cell_dir = self._nova_confs()
        api_conf = os.path.join(api_dir, 'nova.conf')
        cell_conf = os.path.join(cell_dir, 'nova.conf')

        def manage(conf, *args):
            self.procs.run('nova-manage', [
                self._bin('nova-manage'), '--config-file', conf] +
                list(args), env=self._env(), timeout=600)

        manage(api_conf, 'api_db', 'sync')
        manage(api_conf, 'cell_v2', 'map_cell0', '--database_connection',
               self._db('nova_cell0'))
        manage(api_conf, 'cell_v2', 'create_cell', '--name', 'cell1',
               '--database_connection', self._db('nova_cell1'),
               '--transport-url', self.rabbit.url())
        manage(api_conf, 'db', 'sync')
        manage(cell_conf, 'db', 'sync')

    def _seed_keystone(self):
        """Projects, users, roles, services and endpoints (cold start)."""
        url = self.keystone_url
        admin = keystone_mod._Admin(
            url, keystone_mod.password_auth(url, 'admin', 'admin'))
        ids = {'projects': {}, 'users': {}, 'roles': {}}
        for role in admin.call('GET', '/roles')['roles']:
            ids['roles'][role['name']] = role['id']
        for name in ('member', 'reader', 'service'):
            if name not in ids['roles']:
                ids['roles'][name] = admin.call(
                    'POST', '/roles', {'role': {'name': name}})['role']['id']
        for project in admin.call('GET', '/projects')['projects']:
            ids['projects'][project['name']] = project['id']
        for name in ('service', 'demo'):
            ids['projects'][name] = admin.call('POST', '/projects', {
                'project': {'name': name, 'domain_id': 'default'}}
            )['project']['id']
        for user in admin.call('GET', '/users')['users']:
            ids['users'][user['name']] = user['id']
        grants = [(u, 'service', r) for u in SERVICE_USERS
                  for r in ('admin', 'service')]
        grants += [(u, 'demo', r) for u, r in DEMO_USERS]
        for user, project, role in grants:
            if user not in ids['users']:
                ids['users'][user] = admin.call('POST', '/users', {
                    'user': {'name': user, 'domain_id': 'default',
                             'password': PASSWORD}})['user']['id']
            admin.call('PUT', '/projects/%s/users/%s/roles/%s' % (
                ids['projects'][project], ids['users'][user],
                ids['roles'][role]))
        services = (('nova', 'compute'), ('cinder', 'block-storage'),
                    ('cinderv3', 'volumev3'), ('glance', 'image'),
                    ('placement', 'placement'), ('neutron', 'network'))
        for name, kind in services:
            service = admin.call('POST', '/services', {'service': {
                'name': name, 'type': kind, 'enabled': True}})['service']
            for interface in ('public', 'internal', 'admin'):
                admin.call('POST', '/endpoints', {'endpoint': {
                    'service_id': service['id'], 'interface': interface,
                    'region_id': REGION,
                    'url': 'http://127.0.0.1:9/unset'}})
        return ids

    def _endpoint_urls(self):
        """The catalog's URL per service type on this start."""
        nova = self.url('nova')
        cinder = self.url('cinder') + '/$(project_id)s'
        return {
            'identity': self.keystone_url,
            'compute': nova,
            'block-storage': cinder,
            'volumev3': cinder,
            'image': 'http://127.0.0.1:%d' % self.ports['glance'],
            'placement': self.url('placement'),
            'network': self.url('network'),
        }

    def _rewrite_template_urls(self):
        """Point the catalog and the cell mappings at this start's ports.

        (A warm start; the cold one ends here too.)
        """
        statements = []
        for kind, url in self._endpoint_urls().items():
            statements.append(
                "UPDATE endpoint e JOIN service s ON e.service_id = s.id "
                "SET e.url = '%s' WHERE s.type = '%s';" % (url, kind))
        self.mariadb.sql('\n'.join(statements), 'keystone')
        self.mariadb.sql(
            "UPDATE cell_mappings SET database_connection = '%s' "
            "WHERE name = 'cell0';\n"
            "UPDATE cell_mappings SET database_connection = '%s', "
            "transport_url = '%s' WHERE name = 'cell1';" % (
                self._db('nova_cell0'), self._db('nova_cell1'),
                self.rabbit.url()), 'nova_api')

    def _save_template(self, tmpl):
        """Stop MariaDB, copy its datadir and Keystone's keys, restart."""
        self.mariadb.stop()
        tmp = tmpl + '.tmp-%d' % os.getpid()
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        shutil.copytree(self.mariadb.datadir, os.path.join(tmp, 'mysql'),
                        symlinks=True)
        for sub in _KEY_DIRS:
            src = os.path.join(self.base_dir, 'keystone', sub)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(tmp, sub))
            else:
                os.makedirs(os.path.join(tmp, sub))
        with open(os.path.join(tmp, 'template.json'), 'w') as fh:
            json.dump({'version': TEMPLATE_VERSION, 'ids': self.ids,
                       'requirements': list(venv.pins())}, fh, indent=1)
        shutil.rmtree(tmpl, ignore_errors=True)
        os.replace(tmp, tmpl)
        self.mariadb.start()
        self._rewrite_template_urls()

    def _start_placement(self):
        pdir = os.path.join(self.base_dir, 'placement')
        service = self._gunicorn('placement', self.ports['placement'],
                                 'placement.wsgi.api:application', pdir,
                                 self._env(OS_PLACEMENT_CONFIG_DIR=pdir))
        self._wait_http(service, self.url('placement') + '/')

    @property
    def location_url(self):
        """The location object's URL, or None (``activation='upload'``)."""
        if self.activation == 'upload':
            return None
        return 'http://127.0.0.1:%d%s' % (
            self.ports['objects'], embedded_demo.LOCATION_PATH %
            embedded_demo.LOCATION_FORMAT)

    def _start_objects(self):
        """Serve the location object (location modes only)."""
        if self.location_url is None:
            return
        path = embedded_demo.LOCATION_PATH % embedded_demo.LOCATION_FORMAT
        self.objects = embedded_demo.ObjectServer(
            {path: payloads.payload(embedded_demo.LOCATION_FORMAT)},
            port=self.ports['objects']).start()

    def _start_glance(self):
        kwargs = dict(PROFILES[self.profile])
        if self.location_url is not None:
            # Glance reads the location object through its http store.
            kwargs.update(http_store=True, allowed_hosts=('127.0.0.1',))
        if self.real is not None:
            kwargs.update(rbd_store=self.real.glance_rbd_store())
        kwargs.update(python=self.python, identity='keystone',
                      keystone=_GlanceKeystone(self.keystone_url),
                      port=self.ports['glance'])
        self.glance = glance_mod.EmbeddedGlance(
            os.path.join(self.base_dir, 'glance'), **kwargs)
        self.glance.profile_name = self.profile
        self.glance.start()
        self.procs.other_logs.append(self.glance.log_file)

    def _start_cinder(self):
        cdir = os.path.join(self.base_dir, 'cinder')
        conf = os.path.join(cdir, 'cinder.conf')
        env = self._env()
        api = self._gunicorn('cinder-api', self.ports['cinder'],
                             'embedded_cinder_wsgi:application', cdir, env,
                             pythonpath=cdir)
        for name in ('cinder-scheduler', 'cinder-volume'):
            self.procs.start(name, [self._bin(name), '--config-file', conf],
                             env=env, cwd=cdir)
        self._wait_http(api, 'http://127.0.0.1:%d/' % self.ports['cinder'])
        self.procs.wait(None, self._cinder_volume_up, 'cinder-volume up',
                        START_TIMEOUT)

    def _cinder_volume_up(self):
        out = self.mariadb.sql(
            "SELECT COUNT(*) FROM services WHERE `binary` = 'cinder-volume'"
            " AND deleted = 0 AND disabled = 0 AND updated_at > "
            "NOW() - INTERVAL 60 SECOND", 'cinder')
        return out.strip() not in ('', '0')

    def _start_nova(self):
        api_dir, cell_dir = self._nova_confs()
        env = self._env()
        api = self._start_nova_api(api_dir)
        api_conf = os.path.join(api_dir, 'nova.conf')
        cell_conf = os.path.join(cell_dir, 'nova.conf')
        self.procs.start('nova-scheduler', [
            self._bin('nova-scheduler'), '--config-file', api_conf],
            env=env, cwd=api_dir)
        self.procs.start('nova-conductor', [
            self._bin('nova-conductor'), '--config-file', cell_conf],
            env=env, cwd=cell_dir)
        self.procs.start('nova-compute', [
            self._bin('nova-compute'), '--config-file',
            os.path.join(cell_dir, 'nova-cpu.conf')],
            env=env, cwd=cell_dir)
        self._wait_http(api, 'http://127.0.0.1:%d/' % self.ports['nova'])

    def _start_nova_api(self, api_dir, port=None, name='nova-api'):
        service = self._gunicorn(name, port or self.ports['nova'],
                                 'embedded_nova_wsgi:application', api_dir,
                                 self._env(OS_NOVA_CONFIG_DIR=api_dir),
                                 pythonpath=api_dir)
        return service

    def start_stock_nova_api(self):
        """A second nova-api without the plugin, beside the first.

        Same ``nova.conf``, Cinder, Glance and cells; Nova's own
        ``api-paste.ini``.  For measurements that interleave the plugin
        and stock Nova on one cloud (``bench/real_stack.py``).

        :returns: its compute endpoint, ``http://127.0.0.1:<port>/v2.1``.
        :raises CloudError: if it does not answer in time.
        """
        stock_dir = self._dir('nova-api-stock')
        for name in ('nova.conf', 'embedded_nova_wsgi.py'):
            shutil.copyfile(os.path.join(self.nova_api_dir, name),
                            os.path.join(stock_dir, name))
        venv_root = os.path.dirname(os.path.dirname(self.python))
        shutil.copyfile(os.path.join(venv_root, 'etc', 'nova',
                                     'api-paste.ini'),
                        os.path.join(stock_dir, 'api-paste.ini'))
        port = proc_mod.free_ports(1, taken=self.ports.values())[0]
        api = self._start_nova_api(stock_dir, port, 'nova-api-stock')
        self._wait_http(api, 'http://127.0.0.1:%d/' % port)
        return 'http://127.0.0.1:%d/v2.1' % port

    def restart_nova_api(self):
        """Stop nova-api and start it again on the same port and files.

        What a deployment tool does after it changed ``api-paste.ini`` or
        ``nova.conf`` (devstack starts nova-api after ``post-config``).
        nova-api reads ``$OS_NOVA_CONFIG_DIR/api-paste.ini`` and
        ``nova.conf`` in :meth:`nova_api_dir`.

        :returns: None
        :raises CloudError: if it does not answer again in time.
        """
        for service in [s for s in self.procs.services
                        if s.name == 'nova-api']:
            service.stop()
            self.procs.services.remove(service)
        api = self._start_nova_api(self.nova_api_dir)
        self._wait_http(api, 'http://127.0.0.1:%d/' % self.ports['nova'])

    @property
    def nova_api_dir(self):
        """nova-api's ``$OS_NOVA_CONFIG_DIR`` (api-paste.ini, nova.conf)."""
        return os.path.join(self.base_dir, 'nova-api')

    def _discover_compute(self):
        """Wait for the compute node, then map it (discover_hosts)."""
        compute = [s for s in self.procs.services
                   if s.name == 'nova-compute'][0]

        def registered():
            out = self.mariadb.sql(
                'SELECT COUNT(*) FROM compute_nodes WHERE deleted = 0',
                'nova_cell1')
            return out.strip() not in ('', '0')

        self.procs.wait(compute, registered, 'nova-compute registered',
                        COMPUTE_TIMEOUT)
        api_conf = os.path.join(self.base_dir, 'nova-api', 'nova.conf')
        self.procs.run('nova-manage', [
            self._bin('nova-manage'), '--config-file', api_conf, 'cell_v2',
            'discover_hosts', '--verbose'], env=self._env())

    # ------------------------------------------------------------------
    # clients and resources

    def session(self, user='admin', project=None):
        """A keystoneauth1 session as a user of the cloud.

        :param user: ``admin`` (project ``admin``), ``demo`` (member of
            ``demo``), ``demo_admin`` (admin of ``demo``) or a service
            user (project ``service``).
        :param project: the project name (default: as above).
        """
        from keystoneauth1 import session as ks_session
        import requests

        if project is None:
            project = {'admin': 'admin', 'demo': 'demo',
                       'demo_admin': 'demo'}.get(user, 'service')
        http = requests.Session()
        http.trust_env = False
        return ks_session.Session(
            auth=keystone_mod.password_auth(self.keystone_url, user,
                                            project),
            session=http)

    def _make_resources(self):
        """Flavors, the demo project's quotas and an image (every start)."""
        admin = self.session('admin')
        self._wait_cinder_pools(admin)
        flavors = {}
        for name, ram, vcpus, disk in FLAVORS:
            resp = admin.post(self.url('nova') + '/flavors', json={
                'flavor': {'name': name, 'ram': ram, 'vcpus': vcpus,
                           'disk': disk}}, raise_exc=False)
            if resp.status_code == 409:
                found = admin.get(self.url('nova') + '/flavors').json()
                flavors[name] = [f['id'] for f in found['flavors']
                                 if f['name'] == name][0]
            elif resp.status_code == 200:
                flavors[name] = resp.json()['flavor']['id']
            else:
                raise CloudError('flavor %s: HTTP %s %s' % (
                    name, resp.status_code, resp.text[:300]))
        self.ids['flavors'] = flavors
        demo = self.ids['projects']['demo']
        admin.put(self.url('nova') + '/os-quota-sets/%s' % demo, json={
            'quota_set': {'instances': -1, 'cores': -1, 'ram': -1}})
        admin.put(self.url('cinder') + '/%s/os-quota-sets/%s' % (
            self.ids['projects']['admin'], demo), json={
            'quota_set': {'volumes': -1, 'snapshots': -1,
                          'gigabytes': -1}})
        self.ids['images'] = {
            'image': self._upload_image(admin, 'cloud-image'),
            'image_alt': self._upload_image(admin, 'cloud-image-alt')}
        if self.real is not None:
            self.ids['images']['guest'] = self._upload_guest(admin)

    def _wait_cinder_pools(self, admin):
        """Until cinder-scheduler knows a backend it can place volumes on.

        cinder-volume's heartbeat (:meth:`_cinder_volume_up`) says it
        runs; only its capability report makes the scheduler list a pool
        (``GET /v3/{project}/scheduler-stats/get_pools``, admin): before
        that every volume create ends in ``NoValidBackend``.

        :raises CloudError: no pool within :data:`START_TIMEOUT`, with
            cinder-scheduler's log.
        """
        url = self.url('cinder') + '/%s/scheduler-stats/get_pools' % (
            self.ids['projects']['admin'])

        def known():
            resp = admin.get(url, raise_exc=False)
            return resp.status_code == 200 and bool(
                resp.json().get('pools'))

        scheduler = [s for s in self.procs.services
                     if s.name == 'cinder-scheduler']
        waited = self.procs.wait(
            scheduler[0] if scheduler else None, known,
            'cinder-scheduler knowing a backend (the first capability '
            'report of cinder-volume)', START_TIMEOUT)
        LOG.info('cinder-scheduler knew a backend after %.1f s', waited)

    def _upload_image(self, session, name):
        """A small public qcow2 image (made with qemu-img)."""
        import subprocess

        path = os.path.join(self.base_dir, name + '.qcow2')
        subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', path,
                        '64M'], check=True, timeout=60)
        return self._upload_file(session, name, path, 'qcow2')

    def _upload_guest(self, session):
        """The marker guest: ``raw``, or ``qcow2`` where Glance refuses raw.

        With ``hw_qemu_guest_agent=yes``: Nova gives its servers the
        agent's channel and quiesces them before volume snapshots.
        """
        path = self.real.guest_disk
        agent = {'hw_qemu_guest_agent': 'yes'}
        if 'raw' in self.glance.disk_formats:
            return self._upload_file(session, 'cloud-guest', path, 'raw',
                                     agent)
        qcow2 = os.path.join(self.base_dir, 'cloud-guest.qcow2')
        self.procs.run('guest-qcow2', ['qemu-img', 'convert', '-q', '-f',
                                       'raw', '-O', 'qcow2', path, qcow2])
        return self._upload_file(session, 'cloud-guest', qcow2, 'qcow2',
                                 agent)

    def _upload_file(self, session, name, path, disk_format,
                     properties=None):
        """A public image of the file at ``path`` (``min_disk`` 1)."""
        glance = self.glance.endpoint
        image = session.post(glance + '/v2/images', json=dict(
            properties or {}, name=name, disk_format=disk_format,
            container_format='bare', visibility='public',
            min_disk=1)).json()
        with open(path, 'rb') as fh:
            session.put(glance + '/v2/images/%s/file' % image['id'],
                        data=fh.read(), headers={
                            'Content-Type': 'application/octet-stream'})
        return image['id']

    def write_tempest_conf(self):
        """Write ``<dir>/tempest/etc/tempest.conf`` for this start.

        :returns: its path.
        """
        tdir = self._dir(os.path.join('tempest', 'etc'))
        path = os.path.join(tdir, 'tempest.conf')
        with open(path, 'w') as fh:
            fh.write(config.tempest_conf(
                self.keystone_url, PASSWORD, self.ids['images']['image'],
                self.ids['images']['image_alt'],
                self.ids['flavors']['cloud.tiny'],
                self.ids['flavors']['cloud.small'],
                self._dir(os.path.join('tempest', 'locks')),
                location_url=self.location_url,
                marker_image_ref=self.ids['images'].get('guest')))
        return path

    def write_plugin_conf(self):
        """Write ``<dir>/nova-snapshot-ext.conf`` for the plugin's CLI.

        :returns: its path (``--config-file`` of ``probe``, ``audit``...).
        """
        path = os.path.join(self.base_dir, 'nova-snapshot-ext.conf')
        with open(path, 'w') as fh:
            fh.write(config.plugin_cli_conf(
                self.keystone_url, PASSWORD,
                driver='libvirt' if self.real else 'fake'))
        return path

    def credentials(self):
        """OS_* variables for the admin and the member (demo) user.

        :returns: ``{'admin': {...}, 'member': {...}}``.
        """
        common = {'OS_AUTH_URL': self.keystone_url,
                  'OS_IDENTITY_API_VERSION': '3',
                  'OS_USER_DOMAIN_NAME': 'Default',
                  'OS_PROJECT_DOMAIN_NAME': 'Default',
                  'OS_REGION_NAME': REGION,
                  'OS_PASSWORD': PASSWORD}
        return {
            'admin': dict(common, OS_USERNAME='admin',
                          OS_PROJECT_NAME='admin'),
            'member': dict(common, OS_USERNAME='demo',
                           OS_PROJECT_NAME='demo'),
        }

    def describe(self):
        """What :command:`serve --cloud` prints with ``--format json``."""
        return {
            'directory': self.base_dir,
            'profile': self.profile,
            'plugin': self.plugin,
            'activation': self.activation,
            'stack': self.stack,
            'glance_store': self.glance_store,
            'ceph_conf': self.real.ceph.conf if self.real else None,
            'libvirt_uri': self.real.libvirtd.uri if self.real else None,
            'location_url': self.location_url,
            'warm': self.warm,
            'seconds': self.timings.get('start'),
            'endpoints': {name: self.url(name) for name in (
                'keystone', 'glance', 'cinder', 'placement', 'nova',
                'network')},
            'credentials': self.credentials(),
            'tempest_conf': self.tempest_conf,
            'plugin_conf': self.plugin_conf,
            'flavors': self.ids.get('flavors', {}),
            'images': self.ids.get('images', {}),
            'pids': {s.name: s.pid for s in self.procs.services
                     if s.pid is not None},
        }


def _site_packages(python):
    root = os.path.dirname(os.path.dirname(python))
    lib = os.path.join(root, 'lib')
    for name in sorted(os.listdir(lib)):
        candidate = os.path.join(lib, name, 'site-packages')
        if os.path.isdir(candidate):
            return candidate
    raise CloudError('no site-packages under %s' % lib)


def _read_template(tmpl):
    try:
        with open(os.path.join(tmpl, 'template.json')) as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        return None
    if record.get('version') != TEMPLATE_VERSION or \
            record.get('requirements') != list(venv.pins()):
        return None
    return record


def main(argv=None):
    """Bring the cloud up once and stop it (a smoke test): prints timings.

    ``python -m nova_snapshot_ext.embedded.cloud.launcher [--cold]``
    """
    argv = sys.argv[1:] if argv is None else argv
    cloud = Cloud(use_template='--cold' not in argv,
                  keep='--keep' in argv)
    cloud.start()
    try:
        print(json.dumps(cloud.describe(), indent=1))
        print(json.dumps(cloud.timings))
    finally:
        cloud.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
