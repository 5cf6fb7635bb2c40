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


"""``nova-snapshot-ext-status upgrade check``: can this deployment
activate honestly, and how?

Built on oslo.upgradecheck like ``nova-status`` and ``glance-status``: one
result per check (Success, Warning, Failure), a table or ``--json``
(``{"name", "checks": [{"check", "result": 0|1|2, "details"}]}``), and the
highest result as the exit status: 0 every check passed, 1 at least one
warning, 2 at least one failure (255, oslo.upgradecheck's own code: no
check result, e.g. a usage error, an unreadable file, a crash).
Configuration is read as the ``nova-snapshot-ext`` command reads it
(``--config-file``, ``--config-dir``, the default files; on a nova-api
host, point ``--config-file`` at ``nova.conf``).

The checks, in order (each decision has one home elsewhere; this module
only asks and words the answer):

* **Plugin options**: every option's value, and the
  ``[snapshot_ext_glance]`` auth plugin where something needs it
  (:func:`_own_access_needed`: not in a nova.conf whose group names no
  auth plugin, with ``glance_connection = nova``, where the Glance checks
  are Warnings saying what was not checked).
* **Snapshot driver**: configured (``[snapshot_ext] driver``), inferred from
  Nova's ``[DEFAULT] compute_driver``, or only guessed
  (:func:`nova_snapshot_ext.driver.choose_driver`; a guessed driver stamps
  no ``hypervisor_type``).
* **Nova release**: when ``nova`` is importable here, that its major is
  supported and its internals are the ones the hook knows
  (:func:`nova_snapshot_ext.nova.hook.check_nova`).
* **Paste filter**: the filter defined and placed right in nova-api's
  ``api-paste.ini`` (``--api-paste FILE``, default
  ``/etc/nova/api-paste.ini``; :mod:`nova_snapshot_ext.nova.paste`).
* **Glance**: reachable with ``[snapshot_ext_glance]``
  (:func:`nova_snapshot_ext.cmd.checks.connect`).
* **Glance API 2.17**: the new location API, for location activation.
* **raw allowed**: zero bytes as ``raw``; else which fallback the plan
  uses (the plan and its reasons: ``probe``'s
  :func:`nova_snapshot_ext.cmd.snapshot.describe_plan`).
* **Default store**: a Cinder-backed default store makes a 1 GiB volume in
  Glance's own project for every zero-byte upload (glance_store's cinder
  driver); location activation avoids it.  Read from
  ``GET /v2/info/stores/detail`` (admin) or from Glance's configuration
  file (``--glance-api-conf FILE``).
* **Location activation (roles)**: in a location mode, whether the
  identity's roles pass the policy of adding a location (member, service
  or admin: :data:`nova_snapshot_ext.cmd.checks.ROUTE_ROLES`), as far as
  the auth plugin tells them.  The plugin never reads an image's
  locations, so the ``service``-only read policy is not judged.
"""

from __future__ import annotations

import configparser
import functools
import sys
import typing as ty

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import logs as cmd_logs
from nova_snapshot_ext.cmd import main as cmd_main
from nova_snapshot_ext.cmd import snapshot as snapshot_cmd
from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.nova import conf as nova_conf
from nova_snapshot_ext.nova import paste
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import service as service_mod

Code = upgradecheck.Code
Result = upgradecheck.Result

PROG = 'nova-snapshot-ext-status'
#: Where nova-api reads its paste file (``$OS_NOVA_CONFIG_DIR``).
DEFAULT_API_PASTE = '/etc/nova/api-paste.ini'
#: The size of the volume glance_store's cinder driver makes for an
#: upload of unknown or zero size (``[glance_store] cinder_volume_size``
#: is not consulted for that: it rounds up to 1 GiB).
CINDER_ZERO_UPLOAD_GIB = 1

STATUS_OPTS = [
    # No default in the option: a file the operator named is judged apart
    # from the default path (a Failure when it cannot be read, anywhere).
    cfg.StrOpt('api-paste', metavar='FILE',
               help="nova-api's paste file, checked for the plugin's "
               'filter (default: %s; a file named here that cannot be '
               'read fails the check on any host)' % DEFAULT_API_PASTE),
    cfg.StrOpt('glance-api-conf', metavar='FILE',
               help="Glance's glance-api.conf, read for its default store "
               'when GET /v2/info/stores/detail does not tell (it needs '
               'an admin)'),
]


#: The Glance check when nothing needs ``[snapshot_ext_glance]``
#: (:func:`_own_access_needed`).
_NO_OWN_ACCESS = (
    'not checked: [%(group)s] names no way to Glance (no auth_type, '
    'auth_section, endpoint_override or auth plugin option), so this '
    'command cannot reach Glance. nova-api does not need it with '
    '[%(nova)s] glance_connection = nova, as here: it reaches Glance '
    "through Nova's [glance] with each user's token. To check Glance's "
    'formats, quotas and location API from here (as probe, snapshot and '
    'audit need), set [%(group)s] auth_type and its options, e.g. password '
    'with auth_url, username, password, project_name')


def _own_access_needed(conf: cfg.ConfigOpts) -> str | None:
    """Why ``[snapshot_ext_glance]`` must be a usable way to Glance.

    The one rule of this command for it:

    * the group names an auth plugin or endpoint
      (:func:`glance_mod.own_access`): it is judged as set;
    * it sets options that are no session or adapter option of its own
      (an auth plugin's ``auth_url``, ``username``..., or a misspelled
      name): the standalone commands' access without ``auth_type``;
    * nova-api loads it at start-up (``[snapshot_ext_nova]
      glance_connection = snapshot_ext_glance``).

    TLS, timeout and other session options alone do not make it needed:
    with the default ``glance_connection = nova`` nova-api never reads
    the group.

    :returns: the reason, for a message; None when nothing needs it.
    """
    group = opts.GLANCE_GROUP
    if glance_mod.own_access(conf):
        return 'it names an auth plugin or endpoint'
    if (conf[nova_conf.GROUP].glance_connection ==
            nova_conf.CONNECTION_PLUGIN):
        return ('nova-api loads it at start-up: [%s] glance_connection = %s'
                % (nova_conf.GROUP, nova_conf.CONNECTION_PLUGIN))
    own = set(conf[group])
    auth = [name for name in checks.options_set(conf, group)
            if name not in own]
    if auth:
        return ('it sets %s, options of an auth plugin for this command '
                'and probe, without auth_type' % ', '.join(auth))
    return None


def _nova_importable() -> bool:
    try:
        import nova  # noqa: F401
    except ImportError:
        return False
    return True


def _options_guarded(check: ty.Callable[[ty.Any], Result]
                     ) -> ty.Callable[[ty.Any], Result]:
    """Run ``check``; an invalid option value it reads is its Failure.

    oslo.config reads a value when it is first used, so any check can meet
    a bad one: the check fails naming it (exit 2) instead of the command
    crashing (exit 255) with a traceback.
    """
    @functools.wraps(check)
    def run(self: ty.Any) -> Result:
        try:
            return check(self)
        except cfg.Error as err:
            return Result(Code.FAILURE, 'not checked: %s' % _message(err))
    return run


class UpgradeChecks(upgradecheck.UpgradeCommands):
    """The checks; each method returns one :class:`Result`.

    :param conf: a ConfigOpts from :func:`new_conf`, parsed before
        :meth:`check` runs.
    """

    display_title = 'nova-snapshot-ext upgrade check'

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._glance: glance_mod.GlanceClient | None = None
        self._glance_error: str | None = None
        self._info: dict[str, ty.Any] | None = None
        self._plan_error: str | None = None

    def check(self) -> Code:
        """Set up logging as the console script does, then run."""
        cmd_logs.setup_logging(self.conf)
        return super().check()

    # --- configuration ----------------------------------------------------

    def _check_options(self) -> Result:
        # Every group's values, [snapshot_ext_nova] too, as the paste
        # filter judges them: all the bad ones at once.
        bad = nova_conf.invalid_values(self.conf)
        needed = None
        try:
            if not bad:
                service_mod.check_options(self.conf)
                checks.check_option_values(self.conf)
                # The auth plugin where something needs it; else the
                # Glance check says what it could not check.
                needed = _own_access_needed(self.conf)
                if needed:
                    checks.check_auth_configuration(self.conf)
        except (exception.SnapshotExtException, checks.CLIError,
                cfg.Error) as err:
            # Only the auth check runs once the reason is known.
            bad = [_message(err) + (' (checked because [%s] is needed: %s)'
                                    % (opts.GLANCE_GROUP, needed)
                                    if needed else '')]
        if bad:
            # A misspelled section is often why an option is missing: the
            # same "did you mean" probe prints.
            return Result(Code.FAILURE, '; '.join(
                bad + checks.section_hints(self.conf)))
        found = checks.config_files(self.conf)
        valid = 'every option valid (read from %s)' % (
            ', '.join(found) if found else 'defaults only: no file')
        typos = checks.section_hints(self.conf)
        if typos:
            return Result(Code.WARNING, '%s; ignored: %s' % (
                valid, '; '.join(typos)))
        return Result(Code.SUCCESS, valid)

    def _check_driver(self) -> Result:
        conf = self.conf
        try:
            driver = driver_mod.load_driver(conf)
        except (exception.SnapshotExtException, cfg.Error) as err:
            return Result(Code.FAILURE, _message(err))
        choice = driver_mod.choose_driver(conf)
        if choice.known:
            return Result(Code.SUCCESS, 'driver %s, %s' % (driver.name,
                                                           choice.reason))
        return Result(Code.WARNING, 'driver only guessed (%s): %s (one of: '
                      '%s)' % (driver.name, choice.reason,
                               ', '.join(driver_mod.driver_names())))

    def _check_nova(self) -> Result:
        if not _nova_importable():
            return Result(Code.SUCCESS, 'nova is not importable here: not '
                          'a nova-api host, nothing to check')
        from nova_snapshot_ext.nova import hook

        reason = hook.check_nova()
        if reason:
            return Result(Code.FAILURE, '%s: the plugin steps aside inside '
                          'this nova-api (one ERROR line at start-up)'
                          % reason)
        return Result(Code.SUCCESS, 'Nova %s (major %s) is supported' % (
            hook.nova_version(), hook.nova_major()))

    def _check_paste(self) -> Result:
        named = self.conf.api_paste is not None
        path = self.conf.api_paste or DEFAULT_API_PASTE
        try:
            with open(path, encoding='utf-8') as f:
                text = f.read()
        except OSError as err:
            if named:
                # The operator named this file: it is meant to be read.
                return Result(Code.FAILURE, '--api-paste %s cannot be read '
                              '(%s)' % (path, err.strerror or err))
            code = Code.FAILURE if _nova_importable() else Code.WARNING
            return Result(code, "cannot read nova-api's paste file %s (%s): "
                          'pass --api-paste FILE on the nova-api host'
                          % (path, err.strerror or err))
        except UnicodeDecodeError:
            return Result(Code.FAILURE, '%s is not UTF-8 text' % path)
        try:
            problems = paste.filter_problems(text)
        except ValueError as err:
            return Result(Code.FAILURE, '%s cannot be read as an ini file: '
                          '%s' % (path, err))
        if problems:
            return Result(Code.FAILURE, '%s: %s' % (path, '; '.join(
                problems)))
        return Result(Code.SUCCESS, '%s: the filter is in every compute API '
                      'pipeline, after %s' % (path, paste.CONTEXT_FILTER))

    # --- Glance -------------------------------------------------------------

    def _connect(self) -> glance_mod.GlanceClient | None:
        if not _own_access_needed(self.conf):
            return None
        if self._glance is None and self._glance_error is None:
            try:
                self._glance = checks.connect(self.conf)
            except (exception.SnapshotExtException, checks.CLIError,
                    cfg.Error) as err:
                self._glance_error = _message(err)
        return self._glance

    def _plan_info(self) -> dict[str, ty.Any] | None:
        """probe's view (capabilities, location, plan), computed once."""
        glance = self._connect()
        if glance is None:
            return None
        if self._info is None and self._plan_error is None:
            try:
                service = service_mod.SnapshotService(self.conf,
                                                      glance=glance)
                self._info = snapshot_cmd.describe_plan(service, glance)
            except (exception.SnapshotExtException, cfg.Error) as err:
                self._plan_error = _message(err)
        return self._info

    def _unchecked(self) -> Result:
        if not _own_access_needed(self.conf):
            return Result(Code.WARNING, 'not checked: this command has no '
                          'way to Glance (see the Glance check)')
        if self._plan_error:
            return Result(Code.FAILURE, 'not checked: no activation plan '
                          'can be made: %s' % self._plan_error)
        return Result(Code.FAILURE, 'not checked: Glance cannot be used (see '
                      'the Glance check)')

    def _check_glance(self) -> Result:
        if not _own_access_needed(self.conf):
            return Result(Code.WARNING, _NO_OWN_ACCESS % {
                'group': opts.GLANCE_GROUP, 'nova': nova_conf.GROUP})
        glance = self._connect()
        if glance is None:
            return Result(Code.FAILURE, self._glance_error)
        return Result(Code.SUCCESS, 'Glance at %s answers' %
                      checks.CONNECTED.get('endpoint', glance.endpoint))

    def _method(self) -> str:
        return str(self.conf.snapshot_ext.activation_method)

    def _check_location_api(self) -> Result:
        info = self._plan_info()
        if info is None:
            return self._unchecked()
        method = self._method()
        if info['glance']['location_api']:
            return Result(Code.SUCCESS, 'API v2.17 listed: location '
                          'activation is possible (activation_method = %s)'
                          % method)
        text = ('GET /versions lists no v2.17: this Glance (before 29 = '
                '2024.2) has no new location API')
        if method == 'upload':
            return Result(Code.WARNING, '%s. Uploads still work; location '
                          'activation (which spares a Cinder default store '
                          'its 1 GiB volume per snapshot) needs Glance 29 or '
                          'later' % text)
        api = str(self.conf.snapshot_ext.location_api)
        if api == 'legacy':
            # Not needed: the configuration names the legacy API.
            return Result(Code.SUCCESS, '%s; not needed: [snapshot_ext] '
                          'location_api = legacy (which needs '
                          'show_multiple_locations = true in Glance: not '
                          'discoverable, a 403 at run time means it is off)'
                          % text)
        if api == 'auto':
            # auto falls back to the legacy API, which may well work.
            return Result(Code.WARNING, '%s: with activation_method = %s '
                          'and location_api = auto the legacy API is used, '
                          'which needs show_multiple_locations = true in '
                          'Glance (not discoverable: a 403 at run time means '
                          'it is off). Upgrade Glance to 29 or later to use '
                          'the new one' % (text, method))
        return Result(Code.FAILURE, '%s, and activation_method = %s with '
                      'location_api = new. Upgrade Glance to 29 or later, '
                      'or set [snapshot_ext] location_api = legacy (needs '
                      'show_multiple_locations = true in Glance) or '
                      'activation_method = upload' % (text, method))

    def _check_raw(self) -> Result:
        info = self._plan_info()
        if info is None:
            return self._unchecked()
        formats = info['glance']['disk_formats']
        uploads = [p for p in info['plan'] if p['method'] == 'upload']
        if 'raw' in formats:
            return Result(Code.SUCCESS, "'raw' is allowed: snapshots upload "
                          'zero bytes as raw')
        if info.get('refused') or not info['plan']:
            return Result(Code.FAILURE, "'raw' is not among this Glance's "
                          'disk_formats (%s) and snapshots would be refused: '
                          "%s. Add raw to Glance's [image_format] "
                          'disk_formats' % (', '.join(formats),
                                            info.get('refused')))
        first = (uploads or info['plan'])[0]
        return Result(Code.WARNING, "'raw' is not among this Glance's "
                      'disk_formats (%s): the driver falls back to %s. Add '
                      "raw to Glance's [image_format] disk_formats for "
                      'zero-byte activation' % (', '.join(formats),
                                                first['describe']))

    def _default_store(self) -> tuple[str | None, str]:
        """(type of the default store or None, where that was read)."""
        glance = self._connect()
        if glance is not None:
            detail = glance.stores_detail()
            for store in detail or ():
                if str(store.get('default', '')).lower() == 'true':
                    return (str(store.get('type') or '') or None,
                            'GET /v2/info/stores/detail (store %s)'
                            % store.get('id'))
        path = self.conf.glance_api_conf
        if path:
            return _store_from_glance_conf(path)
        return None, ('neither GET /v2/info/stores/detail (admin only, and '
                      'multi-store only) nor --glance-api-conf told it')

    def _check_default_store(self) -> Result:
        named = self.conf.glance_api_conf
        if named:
            # A file the operator named is meant to be read, even when
            # Glance itself tells the store (as --api-paste).
            try:
                _store_from_glance_conf(named)
            except ValueError as err:
                return Result(Code.FAILURE, str(err))
        try:
            kind, source = self._default_store()
        except exception.GlanceError as err:
            return Result(Code.FAILURE, _message(err))
        except ValueError as err:
            return Result(Code.FAILURE, str(err))
        if kind is None:
            return Result(Code.WARNING, 'cannot tell the default store: %s. '
                          'Pass --glance-api-conf /etc/glance/glance-api.conf'
                          % source)
        if kind != 'cinder':
            return Result(Code.SUCCESS, 'default store type %s (from %s)'
                          % (kind, source))
        if self._method() == 'location-first':
            return Result(Code.SUCCESS, 'default store is Cinder (from %s); '
                          'activation_method = location-first avoids its '
                          'volume per upload' % source)
        return Result(Code.WARNING, "the default store is Cinder (from %s): "
                      "glance_store's cinder driver makes a %d GiB volume in "
                      "Glance's own project for every zero-byte upload, one "
                      'per snapshot. Set [snapshot_ext] activation_method = '
                      'location-first with location_url on an http store'
                      % (source, CINDER_ZERO_UPLOAD_GIB))

    def _check_location_roles(self) -> Result:
        """The roles location activation needs, judged as Glance would.

        The plugin adds a location (``add_image_location``, or the legacy
        ``PATCH`` ``set_image_location``) and never reads one back, so
        Glance's ``fetch_image_location`` (``service`` only) is not judged:
        the route's roles come from
        :data:`nova_snapshot_ext.cmd.checks.ROUTE_ROLES` (the one home,
        shared with ``probe``).
        """
        method = self._method()
        if method == 'upload':
            return Result(Code.SUCCESS, 'not needed: activation_method = '
                          'upload adds no location')
        glance = self._connect()
        if glance is None:
            return self._unchecked()
        route, rules, needs = checks.location_route(
            str(self.conf.snapshot_ext.location_api))
        roles = _identity_roles(glance)
        if roles is None:
            return Result(Code.WARNING, 'cannot tell the roles of [%s] '
                          '(auth_type %s does not say): adding a location '
                          '(Glance policy %s) needs one of: %s'
                          % (opts.GLANCE_GROUP, getattr(
                              self.conf[opts.GLANCE_GROUP], 'auth_type',
                              None), rules, ', '.join(needs)))
        held = sorted(set(needs) & set(roles))
        if held:
            return Result(Code.SUCCESS, "the identity's role %s passes "
                          'Glance policy %s (activation_method = %s; the '
                          "plugin never reads an image's locations)"
                          % (held[0], rules, method))
        return Result(Code.FAILURE, "the identity's roles (%s) include none "
                      'of %s: Glance refuses it %s (403) and location '
                      'activation fails. Give it the member role on its '
                      'project' % (', '.join(sorted(roles)) or 'none',
                                   ', '.join(needs), rules))

    _upgrade_checks = tuple((name, _options_guarded(check))
                            for name, check in (
        ('Plugin options', _check_options),
        ('Snapshot driver', _check_driver),
        ('Nova release', _check_nova),
        ('Paste filter', _check_paste),
        ('Glance', _check_glance),
        ('Glance API 2.17 (location activation)', _check_location_api),
        ("'raw' allowed", _check_raw),
        ('Default store', _check_default_store),
        ('Location activation (roles)', _check_location_roles),
    ))


def _message(err: BaseException) -> str:
    if isinstance(err, checks.CLIError):
        return err.message
    if isinstance(err, exception.SnapshotExtException):
        return checks.clean_message(err.format_message())
    return checks.clean_message(str(err))


def _store_from_glance_conf(path: str) -> tuple[str | None, str]:
    """The default store's type from a ``glance-api.conf``.

    Multi-store: ``[glance_store] default_backend`` names one of
    ``[DEFAULT] enabled_backends`` (``name:type``); single store:
    ``[glance_store] default_store`` (Glance's default ``file``).

    :raises ValueError: the file cannot be read.
    """
    parser = configparser.RawConfigParser(strict=False)
    try:
        with open(path, encoding='utf-8') as f:
            parser.read_file(f)
    except (OSError, UnicodeDecodeError, configparser.Error) as err:
        raise ValueError('--glance-api-conf %s cannot be read: %s' % (
            path, ' '.join(str(err).split())))
    backends = parser.get('DEFAULT', 'enabled_backends', fallback='')
    if backends.strip():
        types = {}
        for item in backends.split(','):
            name, _, kind = item.partition(':')
            types[name.strip()] = kind.strip()
        default = parser.get('glance_store', 'default_backend',
                             fallback='').strip()
        return (types.get(default) or None,
                '%s: [glance_store] default_backend = %s' % (path, default))
    default = parser.get('glance_store', 'default_store',
                         fallback='file').strip()
    return default, '%s: [glance_store] default_store = %s' % (path, default)


def _identity_roles(glance: glance_mod.GlanceClient) -> list[str] | None:
    """The roles of the configured identity's token, when known.

    ``None`` for plugins without Keystone (``admin_token``, ``none``).
    """
    session = glance.session
    auth = session.auth
    if auth is None or not hasattr(auth, 'get_access'):
        return None
    try:
        access = auth.get_access(session)
    except (ks_exc.ClientException, NotImplementedError, AttributeError):
        return None
    roles = getattr(access, 'role_names', None)
    return [str(r) for r in roles] if roles is not None else None


def new_conf() -> cfg.ConfigOpts:
    """The console script's options plus this command's own."""
    conf = cmd_main.new_conf(cli=False)
    conf.register_cli_opts(STATUS_OPTS)
    # nova-api's options too: nova.conf is this command's usual file.
    nova_conf.register_opts(conf)
    return conf


#: oslo.upgradecheck's status for an error that is no check result (its
#: ``run`` returns it when a check crashes): a usage error, a missing or
#: unreadable configuration file.  0, 1 and 2 are check results only.
EXIT_ERROR = 255


def refuse_unknown_action(argv: list[str], command: int | None) -> None:
    """Refuse ``upgrade <word>`` unless the word is ``check``.

    oslo.upgradecheck takes any word in that place (its ``check`` is a
    positional argument, not a choice): ``upgrade chek`` would run the
    checks as if nothing were wrong.  After ``upgrade`` only ``--json``
    (and help) may come besides ``check``, spelled out: argparse would
    take ``--jso`` for ``--json``.

    :param command: the index of ``upgrade`` in ``argv`` (None: not
        given; argparse says so).
    :raises CLIError: naming the word and the one action, or an option
        given after ``upgrade`` that belongs before it.
    """
    if command is None:
        return
    rest = [arg for arg in argv[command + 1:] if arg != '--']
    if any(arg in ('-h', '--help') for arg in rest):
        return  # argparse prints the help
    usage = '%s [OPTIONS] upgrade check [--json]' % PROG
    for arg in rest:
        if arg.startswith('-') and arg != '--json':
            raise checks.CLIError(
                "option %s after 'upgrade': options other than --json go "
                'before it (%s)' % (arg.split('=', 1)[0], usage),
                checks.EXIT_INPUT)
    words = [arg for arg in rest if not arg.startswith('-')]
    if words and words[0] != 'check':
        raise checks.CLIError(
            "unknown action %r after 'upgrade' (the one action is "
            "'check': %s)" % (words[0], usage), checks.EXIT_INPUT)


def main(argv: list[str] | None = None) -> int:
    """``nova-snapshot-ext-status [--version] upgrade check [--json]``.

    :returns: 0, 1 or 2, the highest check result; 255 (as
        oslo.upgradecheck) for anything that is not a check result: a
        usage error, a missing or unreadable configuration file, a check
        that crashed.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    checks.WARNED.clear()  # each warning once per command
    conf = new_conf()
    # oslo.upgradecheck's main() without its parse: the same sub-command,
    # plus --version, and this program's name in usage lines.
    upgradecheck.register_cli_options(conf, UpgradeChecks(conf))
    try:
        refuse_unknown_action(argv, cmd_main.refuse_unknown_globals(
            conf, argv, ('upgrade',), PROG))
        cmd_main.refuse_blank_globals(conf, argv)
        cmd_main.check_config_args(argv)
        conf(args=argv, project=cmd_main.PROJECT, prog=PROG,
             version=cmd_main.version())
    except SystemExit as err:
        # --help, --version: 0; an argparse usage error (2): no check ran.
        return 0 if err.code in (None, 0) else EXIT_ERROR
    except checks.CLIError as err:
        print('error: %s' % err.message, file=sys.stderr)
        return EXIT_ERROR
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigDirNotFoundError,
            cfg.ConfigFileParseError, UnicodeDecodeError) as err:
        print('error: %s' % checks.clean_message(str(err)), file=sys.stderr)
        return EXIT_ERROR
    # UpgradeCommands.check reads --json from the module's CONF, which
    # oslo.upgradecheck's own main() sets.
    upgradecheck.CONF = conf
    return int(upgradecheck.run(conf))


if __name__ == '__main__':
    sys.exit(main())
