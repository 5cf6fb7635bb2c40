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


"""``nova-snapshot-ext serve``: a real Glance to try the commands by hand.

Starts the embedded glance-api (:mod:`nova_snapshot_ext.embedded.glance`,
any of its profiles, on any database the launcher supports), writes a
ready configuration file for the console script, prints how to use it
(``probe``, ``snapshot``, ``audit`` with ``--config-file``) and serves
until Ctrl-C or SIGTERM; then it stops Glance and removes its temporary
directory and the configuration file it wrote.

The configuration uses ``[snapshot_ext_glance] auth_type = admin_token``:
the embedded Glance reads the token as ``user:project:roles``
(:mod:`nova_snapshot_ext.embedded.tokenauth`).  The project defaults to
the requester's project of the shipped sample request, so ``snapshot``
of that request is owned where Nova would own it.

With ``--format json`` the first line on stdout is one JSON object:
``{"endpoint", "config_file", "glance_api_conf", "profile", "database",
"driver", "project_id", "roles", "log_file", "commands": [...],
"status_command"}``; progress goes to stderr.  ``glance_api_conf`` is the
``glance-api.conf`` the embedded Glance runs with (removed at stop), for
``nova-snapshot-ext-status upgrade check --glance-api-conf``
(``status_command`` is that command, ready to run).  Every printed command
runs as printed from any shell (:func:`console_command`): the console
script by its absolute path beside the running interpreter (a tox or
virtualenv ``bin`` that is not on the user's ``PATH``), else ``python -m``
with that interpreter; paths are shell-quoted.  Exit status 0 once
stopped by Ctrl-C or SIGTERM; 2 for a bad argument; 3 when Glance cannot
start.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shlex
import signal
import sys
import sysconfig
import time
import typing as ty

from oslo_config import cfg

from nova_snapshot_ext.cmd import checks

#: The database every launcher supports.
SQLITE = 'sqlite'
DEFAULT_ROLES = ('member', 'reader')
DEFAULT_USER = 'serve-user'


def _database_module() -> ty.Any:
    """:mod:`nova_snapshot_ext.embedded.database`, when installed."""
    try:
        return importlib.import_module('nova_snapshot_ext.embedded.database')
    except ImportError:
        return None


def databases() -> tuple[str, ...]:
    """The databases the embedded Glance launcher can run on here.

    SQLite always; the kinds of :mod:`nova_snapshot_ext.embedded.database`
    (``KINDS``, e.g. MariaDB and PostgreSQL) when that module exists.
    """
    module = _database_module()
    return (SQLITE,) + tuple(getattr(module, 'KINDS', ()) or ())


def add_parser(subparsers: ty.Any) -> None:
    """The ``serve`` sub-command and its arguments."""
    from nova_snapshot_ext.embedded import glance as embedded

    p = subparsers.add_parser(
        'serve', help='run an embedded real Glance to try the commands on',
        description='Start a real glance-api on 127.0.0.1, write a '
        'configuration file for this command, print how to run probe, '
        'snapshot and audit with it, and serve until Ctrl-C (then stop '
        'Glance and remove what serve wrote). Needs the embedded '
        'requirements (glance, gunicorn: pip install -r '
        'embedded-requirements.txt).')
    p.add_argument('--profile', default='default',
                   help='embedded Glance profile: %s (default: default)'
                   % ', '.join(sorted(embedded.PROFILES)))
    p.add_argument('--database', default=SQLITE,
                   help='database under Glance: %s (default: sqlite)'
                   % ', '.join(databases()))
    p.add_argument('--driver', default='libvirt',
                   help='[snapshot_ext] driver of the written configuration '
                   '(default: libvirt)')
    p.add_argument('--project-id', metavar='PROJECT_ID',
                   help="the identity's project (default: the requester's "
                   'project of the shipped sample request)')
    p.add_argument('--roles', default=','.join(DEFAULT_ROLES),
                   help="the identity's roles, comma separated (default: "
                   '%s; add admin to audit every project)'
                   % ','.join(DEFAULT_ROLES))
    p.add_argument('--cloud', action='store_true',
                   help='start the whole cloud in a box instead (Keystone, '
                   'Glance with --profile, Cinder, Placement, Nova with '
                   'this plugin in nova-api; doc/source/cloud.rst): print '
                   'OS_* variables for an admin and a member and a ready '
                   'tempest.conf; about 40 s warm (60 s with --stack real),'
                   ' a few minutes the first time')
    p.add_argument('--stock-nova', action='store_true',
                   help='with --cloud: nova-api without the plugin (to '
                   'compare)')
    p.add_argument('--activation', metavar='METHOD',
                   help='with --cloud: the plugin\'s [snapshot_ext] '
                   'activation_method in nova-api: upload (default), '
                   'location-first or location-fallback (the cloud then '
                   'serves the plugin\'s empty qcow2 image on 127.0.0.1 as '
                   'location_url and gives Glance its http store)')
    p.add_argument('--stack', metavar='STACK',
                   help='with --cloud: fake (default: Cinder\'s and Nova\'s '
                   'fake drivers, no byte stored, no guest run) or real '
                   '(Ceph RBD for Cinder, libvirt/QEMU for nova-compute, '
                   'and the marker guest image cloud-guest, whose console '
                   'shows the marker on each disk; Debian packages listed '
                   'in doc/source/cloud.rst)')
    p.add_argument('--glance-store', metavar='STORE',
                   help='with --cloud --stack real: file (default) or rbd '
                   '(Glance\'s images in Ceph too)')
    p.add_argument('--config-out', metavar='FILE',
                   help='where to write the configuration file (must not '
                   'exist; removed at stop; default: in the temporary '
                   'directory)')


def _check_args(args: ty.Any) -> tuple[str, list[str]]:
    """Refuse bad arguments before anything starts (exit 2)."""
    from nova_snapshot_ext import driver as driver_mod
    from nova_snapshot_ext.embedded import glance as embedded

    if args.profile not in embedded.PROFILES:
        raise checks.CLIError('--profile %s is not a profile; known: %s' % (
            args.profile, ', '.join(sorted(embedded.PROFILES))))
    if args.database not in databases():
        raise checks.CLIError('--database %s is not supported here; known: '
                              '%s' % (args.database, ', '.join(databases())))
    if args.driver not in driver_mod.driver_names():
        raise checks.CLIError('--driver %s is not an installed driver; '
                              'known: %s' % (args.driver, ', '.join(
                                  driver_mod.driver_names())))
    roles = [r.strip() for r in args.roles.split(',') if r.strip()]
    if not roles or any(not re.match(r'^[\w-]+$', r) for r in roles):
        raise checks.CLIError('--roles must be role names separated by '
                              'commas, got %r' % args.roles)
    for name in ('activation', 'stock_nova', 'stack', 'glance_store'):
        # Given at all (an empty value too), not only a true one.
        if getattr(args, name) not in (None, False):
            raise checks.CLIError(
                '--%s is an option of --cloud (the embedded Glance alone '
                'has no nova-api)' % name.replace('_', '-'))
    project = args.project_id or _sample_project()
    if not re.match(r'^[\w-]+$', project):
        raise checks.CLIError('--project-id must be a project id (letters, '
                              'digits, - and _), got %r' % project)
    if args.config_out is not None:
        check_output_path('--config-out', args.config_out)
    return project, roles


def check_output_path(option: str, path: str) -> None:
    """Refuse an output file serve could not write, before anything starts.

    The file must not exist (serve writes a new one and removes it at
    stop) and its directory must exist and be writable.

    :raises CLIError: exit 2, naming ``option``.
    """
    if not path.strip():
        raise checks.CLIError('%s must name a file, got an empty value'
                              % option)
    if os.path.lexists(path):
        raise checks.CLIError('%s %s exists; serve writes a new file and '
                              'removes it at stop' % (option, path))
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise checks.CLIError('%s %s cannot be written: its directory %s %s'
                              % (option, path, directory,
                                 'is not a directory' if
                                 os.path.lexists(directory) else
                                 'does not exist'))
    if not os.access(directory, os.W_OK | os.X_OK):
        raise checks.CLIError('%s %s cannot be written: no permission to '
                              'create files in %s' % (option, path,
                                                      directory))


def _sample_project() -> str:
    from nova_snapshot_ext.snapshot import request as request_mod

    with open(request_mod.SAMPLE_REQUEST, encoding='utf-8') as f:
        return str(json.load(f)['requester']['project_id'])


#: The console scripts serve prints (setup.cfg console_scripts), and the
#: modules that run them.
MAIN_SCRIPT = ('nova-snapshot-ext', 'nova_snapshot_ext.cmd.main')
STATUS_SCRIPT = ('nova-snapshot-ext-status', 'nova_snapshot_ext.cmd.status')


def console_command(script: str, module: str) -> str:
    """How to run console script ``script`` from any shell, shell-quoted.

    The serve process may run in an environment whose ``bin`` is on its
    own ``PATH`` only (``tox -e demo``, a virtualenv not activated in the
    user's other terminal): never the bare name.

    :returns: the absolute path of ``script`` in the running
        interpreter's scripts directory (where pip installs it) or beside
        the interpreter, when it is there and executable; else
        ``<this interpreter> -m <module>``.
    """
    python = os.path.abspath(sys.executable)
    for directory in (sysconfig.get_path('scripts'),
                      os.path.dirname(python)):
        path = os.path.join(os.path.abspath(directory), script)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return shlex.quote(path)
    return '%s -m %s' % (shlex.quote(python), module)


def commands(prog: str, config_file: str, request: str) -> list[str]:
    """The commands to try, as they are printed.

    :param prog: the main command (:func:`console_command`).
    """
    conf, req = shlex.quote(config_file), shlex.quote(request)
    return ['%s probe --config-file %s' % (prog, conf),
            '%s snapshot --config-file %s %s' % (prog, conf, req),
            '%s audit --config-file %s' % (prog, conf)]


def status_command(prog: str, config_file: str,
                   glance_api_conf: str) -> str:
    """The upgrade check against this Glance, as it is printed.

    ``--glance-api-conf`` tells it Glance's default store, which only an
    admin may read from Glance itself.

    :param prog: the status command (:func:`console_command`).
    """
    return '%s --config-file %s --glance-api-conf %s upgrade check' % (
        prog, shlex.quote(config_file), shlex.quote(glance_api_conf))


def run(conf: cfg.ConfigOpts, wait: ty.Callable[[], None] | None = None
        ) -> int:
    """Serve until interrupted; returns the exit status.

    :param wait: blocks until the operator stops serve (default: sleep
        until Ctrl-C or SIGTERM, which raise ``KeyboardInterrupt``).
    :raises CLIError: a bad argument (2), Glance failed to start (3).
    """
    from nova_snapshot_ext.cmd import demo as demo_cmd
    from nova_snapshot_ext.embedded import glance as embedded

    args = conf.command
    if getattr(args, 'cloud', False):
        return run_cloud(conf, wait)
    project, roles = _check_args(args)
    demo_cmd.check_embedded_requirements('serve')
    kwargs = dict(embedded.PROFILES[args.profile])
    if args.database != SQLITE:
        module = _database_module()
        reason = module.missing(args.database)
        if reason:
            raise checks.CLIError('--database %s cannot run here: %s'
                                  % (args.database, reason))
        kwargs['database'] = module.shared_server(args.database)
    log = sys.stderr
    # Ctrl-C stops serve even when started with SIGINT ignored (a
    # background job of a non-interactive shell).
    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGINT, signal.default_int_handler)
    print('Starting an embedded real Glance (profile %s, database %s)...'
          % (args.profile, args.database), file=log, flush=True)
    glance = embedded.EmbeddedGlance(identity='token', **kwargs)
    started = False
    written = None
    try:
        try:
            glance.start()
        except embedded.EmbeddedGlanceError as err:
            raise checks.CLIError('the embedded Glance failed: %s' % err,
                                  checks.EXIT_UNREACHABLE)
        started = True
        written = _write_config(glance, args, project, roles)
        # Ctrl-C is how serve is stopped, from the moment it says it is
        # up: the banner is inside the same handler as the wait.
        try:
            print(_banner(conf, glance, written, project, roles),
                  flush=True)
            (wait or _sleep_forever)()
        except KeyboardInterrupt:
            pass
        return checks.EXIT_OK
    finally:
        print(_stop(glance, args, written, started), file=log, flush=True)


def _write_config(glance: ty.Any, args: ty.Any, project: str,
                  roles: list[str]) -> str:
    """Write the CLI's configuration for the running Glance.

    :returns: its absolute path (the commands printed run from any
        directory): ``--config-out`` or one in Glance's directory.
    :raises CLIError: it cannot be written (checked before the start;
        the directory changed since).
    """
    from nova_snapshot_ext.embedded import demo

    path = (os.path.abspath(args.config_out) if args.config_out
            else os.path.join(glance.base_dir, 'nova-snapshot-ext.conf'))
    token = glance.token(project, DEFAULT_USER, roles=roles)
    try:
        demo.write_config(path, glance.endpoint, token, args.driver)
    except OSError as err:
        raise checks.CLIError('%s %s cannot be written: %s' % (
            '--config-out' if args.config_out else 'the configuration '
            'file', path, err.strerror or err))
    return path


def _banner(conf: cfg.ConfigOpts, glance: ty.Any, written: str,
            project: str, roles: list[str]) -> str:
    """What serve prints once Glance is up (JSON with ``--format json``)."""
    from nova_snapshot_ext.snapshot import request as request_mod

    args = conf.command
    lines = commands(console_command(*MAIN_SCRIPT), written,
                     request_mod.SAMPLE_REQUEST)
    status = status_command(console_command(*STATUS_SCRIPT), written,
                            glance.glance_api_conf)
    if conf.format == 'json':
        return json.dumps({
            'endpoint': glance.endpoint, 'config_file': written,
            'glance_api_conf': glance.glance_api_conf,
            'profile': args.profile, 'database': args.database,
            'driver': args.driver, 'project_id': project, 'roles': roles,
            'log_file': glance.log_file, 'commands': lines,
            'status_command': status})
    return ('Glance %s is up (profile %s, database %s; its log: %s).\n'
            'Configuration for this command: %s\n'
            "Glance's configuration (for --glance-api-conf): %s\n"
            '(identity: project %s, roles %s; driver %s)\n'
            'Try, in another terminal:\n  %s\n  %s\n'
            'Ctrl-C stops Glance and removes the configuration file and the '
            'temporary directory.'
            % (glance.endpoint, args.profile, args.database,
               glance.log_file, written, glance.glance_api_conf, project,
               ','.join(roles), args.driver, '\n  '.join(lines), status))


def _stop(glance: ty.Any, args: ty.Any, written: str | None,
          started: bool) -> str:
    """Stop what serve started, remove what it wrote; say exactly that.

    The database server serve started (``--database`` other than sqlite)
    is stopped here, before the sentence is printed, not at exit.
    """
    glance.stop()
    done = ['Glance stopped' if started else 'Glance did not start']
    if args.database != SQLITE:
        module = _database_module()
        stopper = getattr(module, 'stop_shared', None)
        if stopper is not None:
            stopper()
            done.append('the %s server stopped' % args.database)
    removed = []
    if written:
        if args.config_out:
            try:
                os.unlink(written)
                removed.append(written)
            except OSError as err:
                done.append('%s could not be removed (%s)' % (
                    written, err.strerror or err))
        else:
            # Written inside the temporary directory, removed with it.
            removed.append(written)
    if started:
        removed.append('the temporary directory')
    if removed:
        done.append('%s removed' % ' and '.join(removed))
    return '; '.join(done) + '.'


def cloud_exports(credentials: dict[str, str]) -> str:
    """``export`` lines of one user's OS_* variables, shell-quoted."""
    return '\n'.join('export %s=%s' % (k, shlex.quote(v))
                     for k, v in sorted(credentials.items()))


def run_cloud(conf: cfg.ConfigOpts,
              wait: ty.Callable[[], None] | None = None) -> int:
    """``serve --cloud``: the cloud in a box until Ctrl-C or SIGTERM.

    :raises CLIError: a bad argument or a missing Debian package (2,
        nothing started), the cloud failed to start (3: its logs are kept
        and the message names their directory).
    """
    from nova_snapshot_ext.embedded.cloud import host
    from nova_snapshot_ext.embedded.cloud import launcher

    args = conf.command
    activation, stack, store = _cloud_choices(args)
    log = sys.stderr
    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGINT, signal.default_int_handler)
    print('Starting the cloud in a box (Glance profile %s, nova-api %s, '
          '%s); the first start installs one virtualenv and migrates a '
          'template (minutes), later ones take about %d s...' % (
              args.profile, 'stock' if args.stock_nova else
              'with nova-snapshot-ext', stack_words(stack, store),
              60 if stack == 'real' else 40), file=log, flush=True)
    cloud = launcher.Cloud(profile=args.profile,
                           plugin=not args.stock_nova, activation=activation,
                           stack=stack, glance_store=store,
                           progress=lambda line: print(
                               '  ' + line + '...', file=log, flush=True))
    try:
        try:
            cloud.start()
        except host.MissingPackages as err:
            # Configuration, not a service that failed: nothing started.
            raise checks.CLIError(str(err), checks.EXIT_INPUT)
        except launcher.CloudError as err:
            raise checks.CLIError(str(err), checks.EXIT_UNREACHABLE)
        except KeyboardInterrupt:
            raise checks.CLIError('interrupted while the cloud was '
                                  'starting', checks.EXIT_SIGINT)
        print(_cloud_banner(conf, cloud.describe()), flush=True)
        try:
            (wait or _sleep_forever)()
        except KeyboardInterrupt:
            pass
        return checks.EXIT_OK
    finally:
        if cloud.running:
            print('Stopping every service of the cloud (about 20 s)...',
                  file=log, flush=True)
        cloud.stop()
        print(cloud_stopped_line(cloud.base_dir), file=log, flush=True)


def _cloud_banner(conf: cfg.ConfigOpts, info: dict[str, ty.Any]) -> str:
    """What ``serve --cloud`` prints once the cloud is up.

    :param info: :meth:`~nova_snapshot_ext.embedded.cloud.launcher.Cloud.
        describe`; printed as it is with ``--format json``.
    """
    if conf.format == 'json':
        return json.dumps(info)
    creds = info['credentials']
    return ('The cloud is up in %s s (%s start; Glance profile %s, '
            'nova-api %s).\nIts directory (configs, logs): %s\n\n'
            'As the admin (project admin):\n%s\n\nAs a member '
            '(user demo, project demo):\n%s\n\n'
            'Flavors: %s\nImages: %s\n'
            'Tempest: a ready tempest.conf is %s\n'
            'This plugin\'s CLI as the admin (probe, audit with '
            'Cinder checks): --config-file %s\n'
            'Ctrl-C stops every service and removes the directory.'
            % (info['seconds'], 'warm' if info['warm'] else 'cold',
               conf.command.profile,
               'with the plugin' if info['plugin'] else 'stock',
               info['directory'], cloud_exports(creds['admin']),
               cloud_exports(creds['member']),
               ', '.join('%s=%s' % i for i in
                         sorted(info['flavors'].items())),
               image_list(info['images']),
               info['tempest_conf'], info['plugin_conf']))


def _cloud_choices(args: ty.Any) -> tuple[str, str, str]:
    """``serve --cloud``'s options checked before anything starts.

    :returns: ``(activation, stack, Glance store)``.
    :raises CLIError: exit 2, naming the option at fault.
    """
    from nova_snapshot_ext.embedded.cloud import launcher

    if args.profile not in launcher.PROFILES:
        raise checks.CLIError('--profile %s is not a profile; known: %s' % (
            args.profile, ', '.join(sorted(launcher.PROFILES))))
    if args.database != SQLITE or args.config_out:
        raise checks.CLIError('--cloud runs its own MariaDB and writes no '
                              'plugin configuration: drop --database and '
                              '--config-out')
    activation = _given(args.activation, 'upload')
    if activation not in launcher.ACTIVATIONS:
        raise checks.CLIError('--activation %s is not an activation method; '
                              'known: %s' % (activation,
                                             ', '.join(launcher.ACTIVATIONS)))
    if activation != 'upload' and args.stock_nova:
        raise checks.CLIError('--activation %s is the plugin\'s: it has no '
                              'meaning with --stock-nova' % activation)
    stack = _given(args.stack, 'fake')
    if stack not in launcher.STACKS:
        raise checks.CLIError('--stack %s is not a stack; known: %s' % (
            stack, ', '.join(launcher.STACKS)))
    store = _given(args.glance_store, 'file')
    if store not in launcher.GLANCE_STORES:
        raise checks.CLIError('--glance-store %s is not a store; known: %s'
                              % (store, ', '.join(launcher.GLANCE_STORES)))
    if store != 'file' and stack != 'real':
        raise checks.CLIError('--glance-store %s needs --stack real (Ceph)'
                              % store)
    return activation, stack, store


def _given(value: str | None, default: str) -> str:
    """An option's value, its default only when it was not given."""
    return default if value is None else value


def stack_words(stack: str, store: str) -> str:
    """How the start line names the storage and the hypervisor."""
    if stack == 'real':
        return 'Ceph RBD (Glance store %s) and libvirt/QEMU' % store
    return 'fake storage and hypervisor'


#: The names the cloud gives the images of ``describe()['images']``.
IMAGE_NAMES = {'image': 'cloud-image', 'image_alt': 'cloud-image-alt',
               'guest': 'cloud-guest'}


def image_list(images: dict[str, str]) -> str:
    """``cloud-image (id <id>), ...``: each image by its Glance name."""
    return ', '.join('%s (id %s)' % (IMAGE_NAMES.get(key, key), image_id)
                     for key, image_id in sorted(images.items()))


def cloud_stopped_line(directory: str | None) -> str:
    """What ``serve --cloud`` says once every service is stopped.

    :param directory: the cloud's directory (None if none was made).
    :returns: one line, true of the directory as it is now: removed, or
        kept (a failed start keeps its logs there).
    """
    if not directory:
        return 'The cloud is stopped; it had made nothing to remove.'
    if os.path.exists(directory):
        return ('The cloud is stopped; its directory %s is kept (the '
                'logs of a start that failed).' % directory)
    return 'The cloud is stopped and %s removed.' % directory


def _sleep_forever() -> None:
    while True:
        time.sleep(3600)
