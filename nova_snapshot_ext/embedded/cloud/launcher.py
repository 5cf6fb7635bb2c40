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

The cloud is the ordered list :data:`.services.SERVICES` (MariaDB,
RabbitMQ, Ceph and libvirtd on the real stack, the network stand-in, the
location object in a location mode, Keystone, Placement, Glance, Cinder,
Nova), one module per service; :class:`Cloud` runs their phases
(:class:`.services.base.CloudService`) and then makes flavors, quotas
and images (:mod:`.resources`).

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
from nova_snapshot_ext.embedded.cloud import realstack
from nova_snapshot_ext.embedded.cloud import resources
from nova_snapshot_ext.embedded.cloud import services as services_mod
from nova_snapshot_ext.embedded.cloud import venv
from nova_snapshot_ext.embedded import digest
from nova_snapshot_ext.embedded import glance as glance_mod
from nova_snapshot_ext.embedded import glance_venv
from nova_snapshot_ext.embedded import keystone as keystone_mod
from nova_snapshot_ext.embedded import process as proc_mod

LOG = logging.getLogger(__name__)

CloudError = proc_mod.CloudError

#: Bumped whenever what the template holds changes.
TEMPLATE_VERSION = 2
PASSWORD = keystone_mod.PASSWORD
REGION = keystone_mod.REGION
#: Profiles: keyword arguments of the embedded Glance (as ``serve``).
PROFILES = glance_mod.PROFILES
#: ``[snapshot_ext] activation_method`` values the cloud can run.
ACTIVATIONS = ('upload', 'location-first', 'location-fallback')
#: ``stack`` values: the fake drivers, or Ceph and libvirt/QEMU.
STACKS = realstack.STACKS
GLANCE_STORES = realstack.GLANCE_STORES
#: What each step of the cloud's own does (``progress``), by its
#: :attr:`Cloud.timings` name; a service's step says its ``words``.
STEP_WORDS = {
    'plugin': 'this checkout into the virtualenv (when it changed)',
    'guest': 'the marker guest\'s disk (built once per kernel)',
    'migrate': 'every database migrated and Keystone bootstrapped (the '
               'first start only: a minute or two)',
    'template': 'a copy of the migrated databases, for later starts',
    'rewrite': 'the template\'s endpoints and cells pointed at this start',
    'discover': 'nova-compute registered and mapped to its cell',
    'cinder_pools': 'cinder-scheduler knowing a backend (cinder-volume\'s '
                    'first capability report)',
    'backup_up': 'cinder-backup up (its first heartbeat)',
    'resources': 'flavors, quotas and images',
}


def system_tempdir():
    """The system temporary directory (not a test's NestedTempfile)."""
    from nova_snapshot_ext.embedded import database

    return database.system_tempdir()


def template_dir():
    """Where the migrated template lives (beside the virtualenv)."""
    return venv.template_dir()


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
                 progress=None, copies=True):
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
        #: nova-api copies backups off the primary storage where
        #: cinder-backup runs (``[snapshot_ext] backup_copies``).
        self.copies = copies
        self._progress = progress
        self.profile = profile
        self.plugin = plugin
        self.activation = activation
        self.nova_glance_port = nova_glance_port
        self.keep = keep
        self.use_template = use_template
        self.base_dir = None
        self.procs = None
        self.python = None
        self.ports = {}
        self.services = []
        self.ids = {}
        self.timings = {}
        self.warm = False
        self.tempest_conf = None
        self.plugin_conf = None
        self._watchdog = None

    # ------------------------------------------------------------------
    # the services

    def service(self, name):
        """The running service called ``name`` (:mod:`.services`).

        :raises KeyError: when this cloud has no such service.
        """
        for service in self.services:
            if service.name == name:
                return service
        raise KeyError('the cloud has no service %r' % name)

    def runs(self, name):
        """Whether this cloud runs the service called ``name``."""
        return any(s.name == name for s in self.services)

    @property
    def backup_copies(self):
        """Whether nova-api copies backups off the primary storage.

        ``[snapshot_ext] backup_copies``: where cinder-backup runs (the
        real stack), unless the cloud was asked not to
        (``Cloud(copies=False)``).
        """
        return bool(self.copies) and self.runs('cinder_backup')

    @staticmethod
    def gather(attribute):
        """Every service's ``attribute`` (its databases, user...), in order.

        Over every service class, whatever this cloud runs, so that the
        template is the same for every stack and mode.

        :returns: a tuple (a tuple-valued attribute is flattened, an
            empty one skipped).
        """
        found = []
        for cls in services_mod.SERVICES:
            value = getattr(cls, attribute)
            if isinstance(value, tuple):
                found.extend(value)
            elif value:
                found.append(value)
        return tuple(found)

    def catalog(self):
        """This start's URL of every catalog type: ``{type: url}``."""
        urls = {}
        for service in self.services:
            urls.update(service.catalog())
        return urls

    @property
    def password(self):
        """Every account's password (the cloud is a test bed)."""
        return PASSWORD

    @property
    def real(self):
        """The real stack's :class:`~.realstack.RealStack`, or None."""
        if not self.runs('ceph_libvirt'):
            return None
        return self.service('ceph_libvirt').real

    @property
    def glance(self):
        """The running :class:`~..glance.EmbeddedGlance`, or None."""
        if not self.runs('glance'):
            return None
        return self.service('glance').server

    # ------------------------------------------------------------------
    # urls

    def url(self, name):
        """The URL of a service.

        :param name: keystone, glance, cinder, placement, nova, network.
        """
        return self.service(name).url()

    @property
    def running(self):
        """Whether any process of the cloud runs now."""
        return self.procs is not None and bool(self.procs.pids())

    @property
    def keystone_url(self):
        return self.url('keystone')

    @property
    def location_url(self):
        """The location object's URL, or None (``activation='upload'``)."""
        if self.activation == 'upload':
            return None
        return self.service('objects').url()

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
            self._stop_services()
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
        self._stop_services()
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.kill()
            watchdog.wait()
        if self.base_dir and not self.keep:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def _stop_services(self):
        """Stop every process group, then each service's own part.

        Newest first; idempotent.
        """
        if self.procs is not None:
            self.procs.stop_all()
        for service in reversed(self.services):
            service.stop()

    def step(self, name, func, *args):
        """Run one step of the start: said as it begins, timed.

        :param name: a :data:`STEP_WORDS` key or a service's name.
        :returns: what ``func(*args)`` returns.
        """
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
        words = {cls.name: cls.words for cls in services_mod.SERVICES}
        return STEP_WORDS.get(name) or words.get(name, name)

    def _start(self):
        self.python = self.step('venv', venv.ensure)
        self.step('plugin', venv.ensure_plugin, self.python)
        classes = [cls for cls in services_mod.SERVICES if cls.wanted(self)]
        names = [port for cls in classes for port in cls.ports]
        taken = (self.nova_glance_port,) if self.nova_glance_port else ()
        self.ports = dict(zip(names, proc_mod.free_ports(len(names),
                                                         taken=taken)))
        self._watchdog = proc_mod.start_watchdog(self.base_dir,
                                                 self.ports['epmd'])
        tmpl = template_dir()
        record = _read_template(tmpl) if self.use_template else None
        self.warm = record is not None
        if self.warm:
            self.ids = record['ids']
        self.services = [cls(self) for cls in classes]
        for service in self.services:
            service.configure(tmpl if self.warm else None)
            if service.backing:
                self.step(service.name, service.start)
        if not self.warm:
            self.step('migrate', self._initialise)
            if self.use_template:
                self.step('template', self._save_template, tmpl)
        self.step('rewrite', self._rehome)
        for service in self.services:
            if not service.backing:
                self.step(service.name, service.start)
        for service in self.services:
            service.settle()
        self.ids.update(self.step('resources', resources.make, self))
        self.tempest_conf = self.write_tempest_conf()
        self.plugin_conf = self.write_plugin_conf()

    def _initialise(self):
        """Migrate every database and bootstrap Keystone (cold start)."""
        for service in self.services:
            service.initialise()

    def _rehome(self):
        for service in self.services:
            service.rehome()

    def _save_template(self, tmpl):
        """Every service's part of the template, and its record."""
        tmp = tmpl + '.tmp-%d' % os.getpid()
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        for service in self.services:
            service.save(tmp)
        with open(os.path.join(tmp, 'template.json'), 'w') as fh:
            json.dump(_template_record(self.ids), fh, indent=1)
        shutil.rmtree(tmpl, ignore_errors=True)
        os.replace(tmp, tmpl)

    def env(self, **extra):
        """The environment of the services' processes.

        Nothing of the caller's virtualenv or cloud; the services'
        virtualenv first on ``PATH`` (the real stack's stand-in ``sudo``
        before it).

        :param extra: variables to set.
        :returns: a dict.
        """
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

    def _directory(self, *parts):
        path = os.path.join(self.base_dir, *parts)
        os.makedirs(path, exist_ok=True)
        return path

    def site_packages(self):
        """The services' virtualenv's ``site-packages``.

        :raises CloudError: when it has none.
        """
        lib = os.path.join(os.path.dirname(os.path.dirname(self.python)),
                           'lib')
        for name in sorted(os.listdir(lib)):
            candidate = os.path.join(lib, name, 'site-packages')
            if os.path.isdir(candidate):
                return candidate
        raise CloudError('no site-packages under %s' % lib)

    # ------------------------------------------------------------------
    # nova-api

    def start_stock_nova_api(self):
        """A second nova-api without the plugin, beside the first.

        Same ``nova.conf``, Cinder, Glance and cells; Nova's own
        ``api-paste.ini``.  For measurements that interleave the plugin
        and stock Nova on one cloud (``bench/real_stack.py``).

        :returns: its compute endpoint, ``http://127.0.0.1:<port>/v2.1``.
        :raises CloudError: if it does not answer in time.
        """
        return self.service('nova').start_stock_api()

    def restart_nova_api(self):
        """Stop nova-api and start it again on the same port and files.

        What a deployment tool does after it changed ``api-paste.ini`` or
        ``nova.conf`` (devstack starts nova-api after ``post-config``).
        nova-api reads ``$OS_NOVA_CONFIG_DIR/api-paste.ini`` and
        ``nova.conf`` in :meth:`nova_api_dir`.

        :returns: None
        :raises CloudError: if it does not answer again in time.
        """
        self.service('nova').restart_api()

    @property
    def nova_api_dir(self):
        """nova-api's ``$OS_NOVA_CONFIG_DIR`` (api-paste.ini, nova.conf)."""
        return os.path.join(self.base_dir, 'nova-api')

    # ------------------------------------------------------------------
    # clients and files

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

    def write_tempest_conf(self):
        """Write ``<dir>/tempest/etc/tempest.conf`` for this start.

        :returns: its path.
        """
        tdir = self._directory('tempest', 'etc')
        path = os.path.join(tdir, 'tempest.conf')
        with open(path, 'w') as fh:
            fh.write(config.tempest_conf(
                self.keystone_url, PASSWORD, self.ids['images']['image'],
                self.ids['images']['image_alt'],
                self.ids['flavors']['cloud.tiny'],
                self.ids['flavors']['cloud.small'],
                self._directory('tempest', 'locks'),
                location_url=self.location_url,
                marker_image_ref=self.ids['images'].get('guest'),
                cinder_backup=self.runs('cinder_backup'),
                backup_copies=self.backup_copies))
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


def _template_record(ids):
    """What a template's ``template.json`` holds."""
    return {'version': TEMPLATE_VERSION, 'ids': ids,
            'services': [cls.name for cls in services_mod.SERVICES],
            'requirements': list(venv.pins()),
            'builder': digest.builder_digest()}


def _read_template(tmpl):
    """The template's record, or None when there is none of this kind."""
    try:
        with open(os.path.join(tmpl, 'template.json')) as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        return None
    expected = _template_record(None)
    if any(record.get(key) != expected[key] for key in (
            'version', 'services', 'requirements', 'builder')):
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
