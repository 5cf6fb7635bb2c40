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

"""The contract of one service of the cloud: :class:`CloudService`.

A service is one module under :mod:`..services` with one subclass, in the
shape of devstack's ``lib/<service>`` (configure, init, start, stop) and
pifpaf's drivers.  What it declares (ports, databases, its Keystone user,
its catalog entries) the cloud gathers from every service, so that adding
a service is one module and one line in :data:`..services.SERVICES`.
"""

import os
import typing as ty

from nova_snapshot_ext.embedded import logs
from nova_snapshot_ext.embedded import process as proc_mod

#: Seconds a service has to answer after it was started.
START_TIMEOUT = 180.0


class CloudService(object):
    """One service of :class:`~..launcher.Cloud`.

    The cloud runs the phases over :data:`..services.SERVICES` in order:

    1. :meth:`configure` (every start): write the service's files; a
       *backing* service (:attr:`backing`) is started right after it.
    2. :meth:`initialise` (the cold start only): migrate databases,
       bootstrap; then :meth:`save` into the template.
    3. :meth:`rehome` (every start): point what the template stored
       (catalog URLs, cell mappings) at this start's ports.
    4. :meth:`start` for every service not backing: start its processes
       and wait until it answers (bounded waits, the log's tail on
       failure).
    5. :meth:`settle` once every service started: wait until it can be
       used (a report another process makes in its own time, so the
       waits of all services overlap their starts).
    6. :meth:`stop` (newest first) once every process was stopped by
       process group: what lives in this process or on the host.

    :param cloud: the :class:`~..launcher.Cloud` (its ``procs``,
        ``ports``, ``python``, ``base_dir``, ``ids`` and other services,
        :meth:`~..launcher.Cloud.service`).
    """

    #: The service's name: progress, timings, ``Cloud.url(name)``.
    name: str = ''
    #: What starting it means to a person waiting (``serve --cloud``).
    words: str = ''
    #: The names of the TCP ports it needs (allocated by the cloud).
    ports: ty.Tuple[str, ...] = ()
    #: Databases it needs on MariaDB (created on the cold start).
    databases: ty.Tuple[str, ...] = ()
    #: Its Keystone user (admin and service on project ``service``).
    user: ty.Optional[str] = None
    #: Its catalog entries: ``((service name, service type), ...)``.
    catalog_entries: ty.Tuple[ty.Tuple[str, str], ...] = ()
    #: Started as soon as configured, before any database is migrated:
    #: what the other services' :meth:`initialise` needs.
    backing = False
    #: The stacks (``Cloud(stack=...)``) it runs on.
    stacks: ty.Tuple[str, ...] = ('fake', 'real')
    #: ``{program or path: Debian package}`` it needs on the host.
    programs: ty.Dict[str, str] = {}

    def __init__(self, cloud):
        self.cloud = cloud

    @classmethod
    def wanted(cls, cloud):
        """Whether this cloud runs the service (its stack, its mode).

        :returns: a bool: whether ``cloud.stack`` is one of
            :attr:`stacks` (a subclass may ask more).
        """
        return cloud.stack in cls.stacks

    # phases ------------------------------------------------------------

    def configure(self, template):
        """Write the service's files (every start).

        :param template: the template directory of a warm start (take
            what :meth:`save` kept there), or None on a cold start.
        """

    def initialise(self):
        """Migrate its databases and bootstrap it (the cold start only)."""

    def save(self, directory):
        """Keep in the template what :meth:`initialise` made.

        Only what lives outside the databases (Keystone's keys).
        """

    def rehome(self):
        """Point stored rows at this start's ports (every start)."""

    def start(self):
        """Start its processes and wait until it answers.

        :raises CloudError: if it does not, with its log's tail.
        """
        raise NotImplementedError

    def settle(self):
        """Wait until the service can be used (after every start).

        :raises CloudError: if it does not within a bounded wait.
        """

    def stop(self):
        """Stop what the cloud's process groups do not (idempotent)."""

    def url(self):
        """Its API root on 127.0.0.1, or None."""
        return None

    def catalog(self):
        """This start's URL of each of its catalog types.

        :returns: ``{service type: url}``: :meth:`url` for each of its
            :attr:`catalog_entries` (a service whose catalog URL differs
            says so itself).
        """
        return {kind: self.url() for _name, kind in self.catalog_entries}

    # helpers -----------------------------------------------------------

    def port(self, name=None):
        """The port ``name`` (default: the service's first port)."""
        return self.cloud.ports[name or self.ports[0]]

    def dir(self, *parts):
        """``<cloud>/<parts>``, made if missing."""
        path = os.path.join(self.cloud.base_dir, *parts)
        os.makedirs(path, exist_ok=True)
        return path

    def bin(self, name):
        """A console script of the cloud's virtualenv."""
        return os.path.join(os.path.dirname(self.cloud.python), name)

    def venv_file(self, *parts):
        """A file the virtualenv installed (``<venv>/<parts>``)."""
        return os.path.join(os.path.dirname(os.path.dirname(
            self.cloud.python)), *parts)

    def env(self, **extra):
        """The services' environment (see :meth:`Cloud.env`)."""
        return self.cloud.env(**extra)

    def run(self, name, cmd, **kwargs):
        """Run a set-up command to its end (:meth:`Processes.run`)."""
        kwargs.setdefault('env', self.env())
        return self.cloud.procs.run(name, cmd, **kwargs)

    def database_url(self, database):
        """The SQLAlchemy URL of one of the cloud's MariaDB databases."""
        return self.cloud.service('mariadb').database_url(database)

    def sql(self, text, database=''):
        """Run SQL as MariaDB's root; returns its output (no headers)."""
        return self.cloud.service('mariadb').sql(text, database)

    def gunicorn(self, name, port, app, directory, env, threads=4,
                 pythonpath=None):
        """Start ``app`` under gunicorn on ``127.0.0.1:port``.

        :returns: the :class:`~nova_snapshot_ext.embedded.process.Service`.
        """
        cmd = proc_mod.gunicorn_command(
            self.cloud.python, app, '127.0.0.1:%d' % port,
            'cloud-%s-%d' % (name, port), directory, threads=threads,
            pythonpath=pythonpath)
        return self.cloud.procs.start(name, cmd, env=env, cwd=directory)

    def wait_http(self, service, url, what=None, timeout=START_TIMEOUT):
        """Wait until ``url`` answers below 500, or ``service`` gives up.

        :raises CloudError: when it exits, when gunicorn restarted its
            worker three times (it cannot load the app), or on timeout.
        """
        def ready():
            if proc_mod.http_ok(url):
                return True
            # gunicorn restarts a worker that cannot load the app forever:
            # give up after a few.
            if logs.tail(service.log, 400).count('Worker (pid:') >= 3:
                raise proc_mod.CloudError(
                    '%s: its workers keep exiting; log %s:\n%s' % (
                        service.name, service.log, logs.tail(service.log)))
            return False

        self.cloud.procs.wait(service, ready,
                              what or '%s answering at %s' % (service.name,
                                                              url),
                              timeout)

    def write(self, path, text):
        """Write ``text`` to ``path`` (a configuration file)."""
        with open(path, 'w') as fh:
            fh.write(text)
        return path


#: The WSGI module a gunicorn-served service imports: its ``argv`` holds
#: only what the service's own parser accepts.
WSGI_MODULE = """\
# Written by nova_snapshot_ext.embedded.cloud.
import sys

sys.argv = sys.argv[:1] + %(argv)r

from %(module)s import application  # noqa: E402,F401
"""


def wsgi_module(module, argv=()):
    """The text of a WSGI file importing ``module``'s ``application``.

    :param module: e.g. ``'nova.wsgi.osapi_compute'``.
    :param argv: arguments the application's parser reads.
    """
    return WSGI_MODULE % {'module': module, 'argv': list(argv)}
