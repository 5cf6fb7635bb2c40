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

"""Run a real Keystone (PyPI ``keystone``) for functional tests.

:class:`EmbeddedKeystone` serves ``keystone.wsgi.api`` with gunicorn on a
free port of 127.0.0.1 (below the ephemeral range, as every embedded
service: :mod:`nova_snapshot_ext.embedded.process`) from its own cached
virtualenv (:data:`RELEASE`, installed by
:func:`nova_snapshot_ext.embedded.glance_venv.ensure_release`), with a
SQLite database and fernet tokens.

Preparing a Keystone (``db_sync``, ``fernet_setup``, ``credential_setup``,
``receipt_setup``, ``bootstrap`` and the accounts below) takes minutes on
a loaded machine, so it is done once into a *template* directory beside
the virtualenv (``<cache>/keystone-NN-template``, reused while the
virtualenv's record is unchanged) and copied for each server; a server
then only rewrites the endpoint URLs of its catalog.

What the template holds (:data:`PASSWORD` for every user; ids in
:attr:`EmbeddedKeystone.ids`):

* roles ``admin`` > ``member`` > ``reader`` (implied) and ``service``;
* projects ``admin``, ``service``, ``demo``, ``alt`` (domain ``default``);
* users ``admin`` (admin on ``admin``), ``glance`` (service and admin on
  ``service``, system reader: what Glance's authtoken and oslo.limit
  need), ``nova`` (service on ``service``: the service-token user),
  ``demo`` (member on ``demo``), ``reader`` (reader on ``demo``),
  ``norole`` (no role anywhere), ``alt`` (member on ``alt``);
* the ``image`` service with public and internal endpoints in
  ``RegionOne`` (URL set by :meth:`EmbeddedKeystone.set_image_endpoint`);
* registered limits for Glance's unified quotas
  (:data:`GLANCE_LIMITS`, generous defaults; per-project limits with
  :meth:`EmbeddedKeystone.set_project_limit`).

Example::

    with EmbeddedKeystone(token_expiration=10) as keystone:
        with EmbeddedGlance(identity='keystone', keystone=keystone) as g:
            keystone.set_image_endpoint(g.endpoint)
            session = keystone.session('demo')
"""

import collections
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from oslo_log import log as logging

from nova_snapshot_ext.embedded import digest
from nova_snapshot_ext.embedded import glance_venv
from nova_snapshot_ext.embedded import logs
from nova_snapshot_ext.embedded import process as proc_mod

LOG = logging.getLogger(__name__)

#: The Keystone installed (2025.2 "Flamingo"), with its WSGI server.
RELEASE = glance_venv.ServiceRelease(
    'keystone', '30.0.0', '3.11', extras=('gunicorn',),
    name='Keystone 30.0.0 (2025.2 Flamingo)')
#: The password of every user of the template.
PASSWORD = 'embedded-keystone-secret'
REGION = 'RegionOne'
#: ``[token] expiration`` (seconds) unless a server sets its own.
DEFAULT_TOKEN_EXPIRATION = 3600
#: Glance's unified-limit resources and the registered default of each
#: (counts; sizes in MiB, Glance's unit).
GLANCE_LIMITS = collections.OrderedDict([
    ('image_size_total', 100000),
    ('image_stage_total', 100000),
    ('image_count_total', 1000),
    ('image_count_uploading', 100),
])
#: user -> (project, roles on it); ``None``: no role anywhere.
USERS = collections.OrderedDict([
    ('glance', ('service', ('service', 'admin'))),
    ('nova', ('service', ('service',))),
    ('demo', ('demo', ('member',))),
    ('reader', ('demo', ('reader',))),
    ('norole', None),
    ('alt', ('alt', ('member',))),
])
PROJECTS = ('service', 'demo', 'alt')

START_TIMEOUT = 180.0
STOP_TIMEOUT = 10.0
MANAGE_TIMEOUT = 300.0
_CONF_NAME = 'keystone.conf'
_DB_NAME = 'keystone.sqlite'
_LOG_NAME = 'keystone.log'
_SEED_NAME = 'seed.json'
_KEY_DIRS = ('fernet-keys', 'credential-keys', 'receipt-keys')
_WSGI_NAME = 'embedded_keystone_wsgi.py'
#: Keystone parses ``sys.argv`` when it is imported: gunicorn's own
#: arguments must not reach it.
_WSGI_SOURCE = """\
# Written by nova_snapshot_ext.embedded.keystone.
import sys

sys.argv = sys.argv[:1]

from keystone.wsgi.api import application  # noqa: E402,F401
"""
_PLACEHOLDER_URL = 'http://127.0.0.1:9/unset'
_CONF_TEMPLATE = """\
# Written by nova_snapshot_ext.embedded.keystone.EmbeddedKeystone.
[DEFAULT]
debug = false
use_stderr = true

[database]
connection = sqlite:///{base}/{db_name}?timeout=30

[token]
provider = fernet
expiration = {expiration}

[fernet_tokens]
key_repository = {base}/fernet-keys

[fernet_receipts]
key_repository = {base}/receipt-keys

[credential]
key_repository = {base}/credential-keys
"""

_tmp_lock = threading.Lock()


class EmbeddedKeystoneError(RuntimeError):
    """The embedded Keystone could not be prepared, started or used."""


class _Server(object):
    """One keystone gunicorn process over a prepared directory.

    :param python: the virtualenv's interpreter.
    :param base_dir: the directory (config, database, keys, log).
    :param expiration: ``[token] expiration`` in seconds.
    """

    def __init__(self, python, base_dir, expiration):
        self.python = python
        self.base_dir = base_dir
        self.expiration = int(expiration)
        self.port = None
        self.process = None
        self.log_file = os.path.join(base_dir, _LOG_NAME)
        self._log = None

    @property
    def url(self):
        """The identity API root, ``http://127.0.0.1:PORT/v3``.

        :returns: a string.
        """
        return 'http://127.0.0.1:%d/v3' % self.port

    def write_config(self):
        """Write ``keystone.conf`` and the WSGI module.

        :returns: None
        """
        with open(os.path.join(self.base_dir, _CONF_NAME), 'w') as fh:
            fh.write(_CONF_TEMPLATE.format(base=self.base_dir,
                                           db_name=_DB_NAME,
                                           expiration=self.expiration))
        with open(os.path.join(self.base_dir, _WSGI_NAME), 'w') as fh:
            fh.write(_WSGI_SOURCE)

    def env(self):
        """The environment of the keystone processes.

        :returns: a dict.
        """
        env = dict(os.environ)
        env.pop('PYTHONPATH', None)
        env.pop('VIRTUAL_ENV', None)
        env['OS_KEYSTONE_CONFIG_DIR'] = self.base_dir
        env['OS_KEYSTONE_CONFIG_FILES'] = _CONF_NAME
        env.setdefault('PYTHONUNBUFFERED', '1')
        return env

    def _open_log(self):
        if self._log is None:
            self._log = open(self.log_file, 'ab')
        return self._log

    def manage(self, *args):
        """Run ``keystone-manage ARGS`` against this directory.

        :param args: the command and its options.
        :returns: None
        :raises EmbeddedKeystoneError: if it fails or times out.
        """
        # keystone.cmd.manage has no ``__main__``: run its console script.
        cmd = [os.path.join(os.path.dirname(self.python), 'keystone-manage'),
               '--config-file',
               os.path.join(self.base_dir, _CONF_NAME)] + list(args)
        log = self._open_log()
        log.write(('--- keystone-manage %s ---\n' % args[0]).encode())
        log.flush()
        try:
            rc = subprocess.run(cmd, cwd=self.base_dir, env=self.env(),
                                stdin=subprocess.DEVNULL, stdout=log,
                                stderr=log, timeout=MANAGE_TIMEOUT).returncode
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EmbeddedKeystoneError(
                'keystone-manage %s failed (%s); log %s:\n%s' % (
                    args[0], exc, self.log_file, logs.tail(self.log_file)))
        if rc != 0:
            raise EmbeddedKeystoneError(
                'keystone-manage %s exited with %d; log %s:\n%s' % (
                    args[0], rc, self.log_file, logs.tail(self.log_file)))

    def start(self, sock):
        """Serve keystone on the bound ``sock`` and wait until it answers.

        :param sock: a listening socket (inherited by gunicorn).
        :returns: None
        :raises EmbeddedKeystoneError: if it exits or is not ready within
            :data:`START_TIMEOUT` seconds.
        """
        self.port = sock.getsockname()[1]
        fd = sock.fileno()
        cmd = proc_mod.gunicorn_command(
            self.python, '%s:application' % _WSGI_NAME[:-3], 'fd://%d' % fd,
            'embedded-keystone-%d' % self.port, self.base_dir,
            pythonpath=self.base_dir)
        log = self._open_log()
        log.write(b'--- gunicorn keystone ---\n')
        log.flush()
        try:
            self.process = subprocess.Popen(
                cmd, cwd=self.base_dir, env=self.env(),
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                pass_fds=(fd,), start_new_session=True)
        except OSError as exc:
            raise EmbeddedKeystoneError('cannot run %s: %s' % (cmd[0], exc))
        proc_mod.wait_for(lambda: proc_mod.http_ok(self.url, timeout=5),
                          'keystone answering at %s' % self.url,
                          START_TIMEOUT, self.process, 'keystone',
                          self.log_file, error=EmbeddedKeystoneError,
                          max_delay=0.5)

    def stop(self):
        """Stop gunicorn (SIGINT, then SIGKILL of its group).

        :returns: None
        """
        master, self.process = self.process, None
        if master is not None and not proc_mod.stop_group(
                master, STOP_TIMEOUT, signal.SIGINT):
            LOG.warning('keystone pid %s did not stop on SIGINT; killed it',
                        master.pid)
        if self._log is not None:
            self._log.close()
            self._log = None


class Admin(object):
    """JSON calls to the identity API as a given user.

    :param url: the identity API root (``.../v3``).
    :param auth: a keystoneauth1 auth plugin.
    """

    def __init__(self, url, auth):
        from keystoneauth1 import session as ks_session
        import requests

        http = requests.Session()
        http.trust_env = False
        self.url = url
        self.session = ks_session.Session(auth=auth, session=http)

    def call(self, method, path, body=None, ok=(200, 201, 204)):
        """Send one request and return its JSON body.

        :param method: e.g. ``'POST'``.
        :param path: below ``/v3``, e.g. ``'/projects'``.
        :param body: a JSON-able dict, or None.
        :param ok: the statuses accepted.
        :returns: the decoded body (``{}`` when empty).
        :raises EmbeddedKeystoneError: on any other status.
        """
        resp = self.session.request(self.url + path, method, json=body,
                                    raise_exc=False)
        if resp.status_code not in ok:
            raise EmbeddedKeystoneError('%s %s: HTTP %s %s' % (
                method, path, resp.status_code, resp.text[:300]))
        return resp.json() if resp.content else {}


def password_auth(url, username, project=None, system=False):
    """A keystoneauth1 v3 password plugin for a template user.

    :param url: the identity API root.
    :param username: a user of the template (domain ``default``).
    :param project: the project name to scope to (domain ``default``).
    :param system: scope to the system instead.
    :returns: a ``keystoneauth1.identity.v3.Password``.
    """
    from keystoneauth1.identity import v3

    kwargs = dict(auth_url=url, username=username, password=PASSWORD,
                  user_domain_id='default')
    if system:
        kwargs['system_scope'] = 'all'
    elif project:
        kwargs.update(project_name=project, project_domain_id='default')
    return v3.Password(**kwargs)


#: Roles every seeded Keystone has (``admin`` comes from bootstrap).
ROLES = ('admin', 'member', 'reader', 'service')
#: The interfaces each seeded catalog entry gets an endpoint on.
INTERFACES = ('public', 'internal', 'admin')


def bootstrap(manage, url):
    """Migrate Keystone's database and bootstrap it (``keystone-manage``).

    ``db_sync``, the fernet, credential and receipt key repositories
    (owned by this process's user), then ``bootstrap``: the ``admin``
    user (password :data:`PASSWORD`) and project, and the identity
    service at ``url`` in :data:`REGION`.

    :param manage: a callable running ``keystone-manage ARGS`` against
        the Keystone to bootstrap (its configuration names the database
        and the key repositories).
    :param url: the identity API root it will serve (``.../v3``).
    :returns: None
    :raises: what ``manage`` raises when a command fails.
    """
    user, group = _account()
    manage('db_sync')
    for setup in ('fernet_setup', 'credential_setup', 'receipt_setup'):
        manage(setup, '--keystone-user', user, '--keystone-group', group)
    manage('bootstrap', '--bootstrap-password', PASSWORD,
           '--bootstrap-admin-url', url, '--bootstrap-internal-url', url,
           '--bootstrap-public-url', url, '--bootstrap-region-id', REGION)


def seed(url, projects, users, services=(), interfaces=INTERFACES):
    """Create what a bootstrapped Keystone lacks of an account set.

    Roles (:data:`ROLES`), projects and users (domain ``default``,
    password :data:`PASSWORD`) are created only when missing; every
    catalog entry gets an endpoint per interface at a placeholder URL
    (a later start points it at its port).

    :param url: the identity API root, as ``admin`` can reach it.
    :param projects: project names.
    :param users: ``{user: (project, (role, ...)) or None}``.
    :param services: ``((service name, service type), ...)``.
    :param interfaces: the endpoint interfaces of each service.
    :returns: ``{'roles'|'projects'|'users': {name: id},
        'services': {type: id}, 'endpoints': {type: {interface: id}}}``.
    :raises EmbeddedKeystoneError: on a refused call.
    """
    admin = Admin(url, password_auth(url, 'admin', 'admin'))
    ids = {'services': {}, 'endpoints': {}}
    for kind, key in (('roles', 'role'), ('projects', 'project'),
                      ('users', 'user')):
        ids[kind] = {item['name']: item['id'] for item in
                     admin.call('GET', '/' + kind)[kind]}
    wanted = (('roles', 'role', ROLES, {}),
              ('projects', 'project', projects, {'domain_id': 'default'}),
              ('users', 'user', users, {'domain_id': 'default',
                                        'password': PASSWORD}))
    for kind, key, names, extra in wanted:
        for name in names:
            if name not in ids[kind]:
                ids[kind][name] = admin.call('POST', '/' + kind, {
                    key: dict(extra, name=name)})[key]['id']
    for name, grant in users.items():
        project, roles = grant or (None, ())
        for role in roles:
            admin.call('PUT', '/projects/%s/users/%s/roles/%s' % (
                ids['projects'][project], ids['users'][name],
                ids['roles'][role]))
    for name, kind in services:
        service = admin.call('POST', '/services', {'service': {
            'name': name, 'type': kind, 'enabled': True}})['service']
        ids['services'][kind] = service['id']
        ids['endpoints'][kind] = {
            interface: admin.call('POST', '/endpoints', {'endpoint': {
                'service_id': service['id'], 'interface': interface,
                'region_id': REGION, 'url': _PLACEHOLDER_URL}}
            )['endpoint']['id'] for interface in interfaces}
    return ids


def _seed(url):
    """The standalone Keystone's accounts, Glance's service and limits.

    :param url: the identity API root of a bootstrapped keystone.
    :returns: the ids (:attr:`EmbeddedKeystone.ids`'s shape).
    """
    ids = seed(url, PROJECTS, USERS, services=(('glance', 'image'),),
               interfaces=('public', 'internal'))
    admin = Admin(url, password_auth(url, 'admin', 'admin'))
    # oslo.limit in Glance reads endpoints and limits with a system scope.
    admin.call('PUT', '/system/users/%s/roles/%s' % (
        ids['users']['glance'], ids['roles']['reader']))
    ids['image_service'] = ids['services'].pop('image')
    ids['endpoints'] = ids['endpoints'].pop('image')
    ids['region'] = REGION
    del ids['services']
    admin.call('POST', '/registered_limits', {'registered_limits': [
        {'service_id': ids['image_service'], 'region_id': REGION,
         'resource_name': name, 'default_limit': value}
        for name, value in GLANCE_LIMITS.items()]})
    return ids


def template_dir():
    """Where the bootstrapped template lives.

    :returns: ``<cache>/keystone-NN-template``.
    """
    return glance_venv.release_dir(RELEASE) + '-template'


def ensure_template(python=None):
    """Build the template once (under a lock), or reuse it.

    The template records the virtualenv record it was built with and the
    code that built it (:func:`.digest.builder_digest`); a change of
    either rebuilds it.

    :param python: the keystone interpreter; :func:`ensure_venv` if None.
    :returns: ``(template directory, ids)``.
    :raises EmbeddedKeystoneError: if a step fails.
    """
    python = python or ensure_venv()
    path = template_dir()
    built_from = {'venv': glance_venv._read_release_record(RELEASE),
                  'python': python, 'users': list(USERS),
                  'limits': list(GLANCE_LIMITS.items()),
                  'builder': digest.builder_digest()}
    with open(path + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(os.path.join(path, _SEED_NAME)) as fh:
                record = json.load(fh)
            if record.get('built_from') == json.loads(json.dumps(
                    built_from)):
                return path, record['ids']
        except (OSError, ValueError):
            pass
        started = time.monotonic()
        shutil.rmtree(path, ignore_errors=True)
        work = path + '.tmp'
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        server = _Server(python, work, DEFAULT_TOKEN_EXPIRATION)
        server.write_config()
        sock = proc_mod.listening_socket()
        try:
            server.port = sock.getsockname()[1]
            bootstrap(server.manage, server.url)
            server.start(sock)
            sock.close()
            ids = _seed(server.url)
        finally:
            sock.close()
            server.stop()
        for name in (_CONF_NAME, _WSGI_NAME, _LOG_NAME):
            try:
                os.remove(os.path.join(work, name))
            except OSError:
                pass
        with open(os.path.join(work, _SEED_NAME), 'w') as fh:
            json.dump({'built_from': built_from, 'ids': ids,
                       'seconds': round(time.monotonic() - started, 1)},
                      fh, indent=1, sort_keys=True)
        os.replace(work, path)
        LOG.info('Keystone template built in %s in %.1f s', path,
                 time.monotonic() - started)
        return path, ids


def _account():
    """The user and group keystone-manage gives the key files to.

    :returns: ``(user name, group name)`` of this process.
    """
    import grp
    import pwd

    return (pwd.getpwuid(os.getuid()).pw_name,
            grp.getgrgid(os.getgid()).gr_name)


def ensure_venv():
    """The interpreter of :data:`RELEASE`, installed on first use.

    :returns: a path.
    :raises nova_snapshot_ext.embedded.glance_venv.GlanceVenvError: if the
        install fails.
    """
    return glance_venv.ensure_release(RELEASE)


class EmbeddedKeystone(object):
    """A real Keystone from a copied template, served by gunicorn.

    :param token_expiration: ``[token] expiration`` in seconds (how long a
        token it issues is valid).
    :param python: the keystone interpreter; the cached virtualenv of
        :data:`RELEASE` if None.
    """

    def __init__(self, token_expiration=DEFAULT_TOKEN_EXPIRATION, *,
                 python=None):
        if int(token_expiration) < 1:
            raise ValueError('token_expiration must be at least 1 second')
        self.token_expiration = int(token_expiration)
        self.python = python
        #: Ids of the template's accounts: ``{'projects': {name: id},
        #: 'users': {...}, 'roles': {...}, 'endpoints': {interface: id},
        #: 'image_service': id, 'region': 'RegionOne'}``.
        self.ids = {}
        self.base_dir = None
        self._server = None
        self._admin = None

    @property
    def url(self):
        """The identity API root (``auth_url``), ``http://.../v3``.

        :returns: a string.
        :raises EmbeddedKeystoneError: if not started.
        """
        if self._server is None:
            raise EmbeddedKeystoneError('embedded keystone is not started')
        return self._server.url

    @property
    def log_file(self):
        """The server log (None when not started).

        :returns: a path or None.
        """
        return self._server.log_file if self._server else None

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc_value, tb):
        self.stop()
        return False

    def start(self):
        """Copy the template, start keystone, point its catalog at itself.

        :returns: self
        :raises EmbeddedKeystoneError: if it cannot be prepared or started.
        """
        started = time.monotonic()
        self.python = self.python or ensure_venv()
        template, ids = ensure_template(self.python)
        self.ids = json.loads(json.dumps(ids))
        with _tmp_lock:
            self.base_dir = tempfile.mkdtemp(prefix='embedded-keystone-')
        try:
            shutil.copyfile(os.path.join(template, _DB_NAME),
                            os.path.join(self.base_dir, _DB_NAME))
            for name in _KEY_DIRS:
                shutil.copytree(os.path.join(template, name),
                                os.path.join(self.base_dir, name))
            self._server = _Server(self.python, self.base_dir,
                                   self.token_expiration)
            self._server.write_config()
            sock = proc_mod.listening_socket()
            try:
                self._server.start(sock)
            finally:
                sock.close()
            self._admin = Admin(self.url, password_auth(
                self.url, 'admin', 'admin'))
            for endpoint in self._admin.call('GET', '/endpoints')[
                    'endpoints']:
                if endpoint['service_id'] != ids['image_service']:
                    self._admin.call('PATCH', '/endpoints/%s' % endpoint[
                        'id'], {'endpoint': {'url': self.url}})
        except BaseException:
            self.stop()
            raise
        LOG.info('Embedded keystone %s started in %.1f s', self.url,
                 time.monotonic() - started)
        return self

    def stop(self):
        """Stop keystone and remove its directory.  Safe to repeat.

        :returns: None
        """
        if self._server is not None:
            self._server.stop()
            self._server = None
        self._admin = None
        if self.base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None

    # ------------------------------------------------------------------
    # administration

    def admin(self, method, path, body=None):
        """One identity API call as the ``admin`` user (project admin).

        :param method: e.g. ``'GET'``.
        :param path: below ``/v3``.
        :param body: a JSON-able dict or None.
        :returns: the decoded answer.
        :raises EmbeddedKeystoneError: on an error status.
        """
        if self._admin is None:
            raise EmbeddedKeystoneError('embedded keystone is not started')
        return self._admin.call(method, path, body)

    def set_image_endpoint(self, url, interfaces=('public', 'internal')):
        """Point the catalog's image endpoints at ``url``.

        :param url: e.g. Glance's (or a proxy's) ``http://127.0.0.1:PORT``.
        :param interfaces: which of ``public``/``internal``.
        :returns: None
        """
        for interface in interfaces:
            self.admin('PATCH', '/endpoints/%s' % self.ids['endpoints'][
                interface], {'endpoint': {'url': url}})

    def set_project_limit(self, project, resource, value):
        """Give a project its own limit of one Glance resource.

        :param project: a project name of the template.
        :param resource: a key of :data:`GLANCE_LIMITS`.
        :param value: the limit (count, or MiB for the sizes); an
            existing limit of the project is replaced.
        :returns: the limit id.
        """
        if resource not in GLANCE_LIMITS:
            raise ValueError('unknown Glance limit %r' % resource)
        project_id = self.ids['projects'][project]
        # A project-scoped token lists only its own project's limits.
        system = Admin(self.url, password_auth(
            self.url, 'admin', system=True))
        # Keystone 30 ignores a PATCH to a limit of 0 (the old value
        # stays): replace the limit instead.
        for limit in system.call('GET', '/limits?project_id=%s&resource_'
                                 'name=%s' % (project_id, resource))[
                                     'limits']:
            system.call('DELETE', '/limits/%s' % limit['id'])
        return system.call('POST', '/limits', {'limits': [{
            'service_id': self.ids['image_service'], 'region_id': REGION,
            'project_id': project_id, 'resource_name': resource,
            'resource_limit': int(value)}]}
        )['limits'][0]['id']

    def application_credential(self, username, project, name=None,
                               roles=None):
        """Create an application credential as the user itself.

        :param username: a template user.
        :param project: the project its token is scoped to.
        :param name: the credential's name (random if None).
        :param roles: role names to restrict it to (all of the user's if
            None).
        :returns: ``(id, secret)``.
        """
        import uuid

        own = Admin(self.url, password_auth(self.url, username, project))
        body = {'name': name or 'cred-%s' % uuid.uuid4().hex[:8]}
        if roles:
            body['roles'] = [{'name': r} for r in roles]
        cred = own.call('POST', '/users/%s/application_credentials' %
                        self.ids['users'][username],
                        {'application_credential': body})
        return (cred['application_credential']['id'],
                cred['application_credential']['secret'])

    def session(self, username, project=None):
        """A keystoneauth1 session authenticating as a template user.

        :param username: a user of :data:`USERS` or ``admin``.
        :param project: the project name (the user's own if None).
        :returns: a ``keystoneauth1.session.Session``.
        """
        from keystoneauth1 import session as ks_session
        import requests

        if project is None:
            grant = USERS.get(username)
            project = grant[0] if grant else (
                'admin' if username == 'admin' else None)
        http = requests.Session()
        http.trust_env = False
        return ks_session.Session(
            auth=password_auth(self.url, username, project), session=http)

    # ------------------------------------------------------------------
    # Glance's configuration

    def glance_options(self):
        """Glance's ``[keystone_authtoken]`` and ``[oslo_limit]`` options.

        The ``glance`` user validates tokens (service role on ``service``)
        and reads limits with a system scope.

        :returns: ``{section: {option: value}}``.
        """
        common = {'auth_url': self.url, 'auth_type': 'password',
                  'username': 'glance', 'password': PASSWORD,
                  'user_domain_id': 'default'}
        return {
            'keystone_authtoken': dict(
                common, www_authenticate_uri=self.url,
                project_name='service', project_domain_id='default',
                # Tokens are checked by Keystone on every request: a token
                # that expired is refused at once.
                token_cache_time=-1),
            'oslo_limit': dict(
                common, system_scope='all',
                endpoint_service_type='image', endpoint_region_name=REGION,
                endpoint_interface='public'),
        }


def main(argv=None):
    """Install the Keystone virtualenv and build its template.

    ``python -m nova_snapshot_ext.embedded.keystone``: what the
    ``functional-keystone`` tox env runs first, so the tests find both
    ready.

    :param argv: unused (no options).
    :returns: the exit code (0 ready, 1 failed).
    """
    started = time.monotonic()
    try:
        python = ensure_venv()
        path, _ = ensure_template(python)
    except (glance_venv.GlanceVenvError, EmbeddedKeystoneError) as exc:
        print(exc)
        return 1
    print('%s ready: %s, template %s (%.1f s)' % (
        RELEASE.label, python, path, time.monotonic() - started))
    return 0


if __name__ == '__main__':
    import sys

    sys.exit(main())
