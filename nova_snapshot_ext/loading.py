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

"""The keystoneauth1 sessions, auth and adapter options of the clients.

One loader for every service the plugin talks to on its own: Glance
(``[snapshot_ext_glance]``, and ``[snapshot_ext_service_user]`` for the
service token) and Cinder (``[snapshot_ext_cinder]``).
:func:`load_session` checks the transport numbers and the auth options
before anything is sent, and names the option at fault
(:func:`auth_option_error`).
"""

from __future__ import annotations

import typing as ty

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import service_token
from keystoneauth1 import session as ks_session
from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext import exception
from nova_snapshot_ext import opts

LOG = logging.getLogger(__name__)


def raised_in_auth_plugin(err: BaseException) -> bool:
    """Whether ``err`` was raised by a keystoneauth1 auth plugin itself."""
    tb = err.__traceback__
    module = ''
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get('__name__', ''))
        tb = tb.tb_next
    return module.startswith((
        'keystoneauth1.identity', 'keystoneauth1.loading',
        'keystoneauth1.token_endpoint'))


def auth_option_error(conf: cfg.ConfigOpts, err: BaseException,
                      group: str = opts.GLANCE_GROUP
                      ) -> exception.ConfigurationError | None:
    """The configuration error behind an auth plugin's own failure, if any.

    keystoneauth1's plugins check some of their options only when they
    first authenticate, and then raise ``OptionError`` or a bare
    ``Exception`` (``password is a required attribute`` from the generic
    ``password`` plugin without ``password``; ``v3applicationcredential``
    without an id or name).  Neither is a network or Keystone answer.

    :param err: what authenticating raised.
    :param group: the options' group (``[snapshot_ext_glance]``,
        ``[snapshot_ext_cinder]``).
    :returns: a :class:`~nova_snapshot_ext.exception.ConfigurationError`
        naming ``[<group>] auth_type`` and the plugin's message,
        or ``None`` when ``err`` is something else (then handle it as
        before).
    """
    if isinstance(err, ks_exc.ClientException) and not isinstance(
            err, ks_exc.OptionError):
        return None
    if not (isinstance(err, ks_exc.OptionError) or (
            type(err) in (Exception, ValueError, TypeError)
            and raised_in_auth_plugin(err))):
        return None
    where = auth_group(conf, group)
    auth_type = getattr(conf[where], 'auth_type', None)
    return exception.ConfigurationError(
        group=where, option='auth_type',
        reason='the %s plugin lacks an option it needs: %s' % (
            auth_type, exception.reason_of(err)))


def own_access(conf: cfg.ConfigOpts) -> bool:
    """Whether ``[snapshot_ext_glance]`` names a way to Glance of its own.

    An auth plugin (``auth_type``, or ``auth_section``) or
    ``endpoint_override`` is set.  Without any, :func:`load_session`
    refuses, and so do the standalone commands and nova-api with
    ``[snapshot_ext_nova] glance_connection = snapshot_ext_glance``;
    nova-api with the default ``glance_connection = nova`` reaches Glance
    through Nova's ``[glance]`` and needs neither.
    """
    group = conf[opts.GLANCE_GROUP]
    return bool(group.auth_type or group.auth_section or
                group.endpoint_override)


def _register_auth_section(conf: cfg.ConfigOpts, group: str) -> None:
    """Register ``auth_type`` in the group ``auth_section`` names.

    keystoneauth1 reads the auth plugin from that group but registers
    nothing there; outside nova-api (where keystonemiddleware registers
    ``[keystone_authtoken]``) oslo.config would answer "no such option".
    """
    section = conf[group].auth_section
    if not section:
        return
    try:
        ks_loading.register_auth_conf_options(conf, section)
    except cfg.DuplicateOptError:
        pass  # registered by its owner with other attributes: theirs


#: Why a group without an auth plugin is refused, by group.
_NO_AUTH = {
    opts.GLANCE_GROUP: 'no auth plugin and no endpoint_override: set '
    'auth_type (e.g. password with auth_url, username, password, '
    'project_name, or admin_token with endpoint and token)',
    opts.CINDER_GROUP: 'no Cinder credentials: set auth_type and its '
    'options to let the rotation delete volume snapshots',
}


def load_auth(conf: cfg.ConfigOpts, group: str = opts.GLANCE_GROUP
              ) -> ty.Any:
    """The auth plugin a group names, checked (None: it names none).

    :param group: the options' group.
    :raises ConfigurationError: unknown ``auth_type``, missing plugin
        options (also those a plugin checks itself, keystoneauth1's
        ``OptionError``), naming the option.
    """
    _register_auth_section(conf, group)
    where = auth_group(conf, group)
    try:
        return ks_loading.load_auth_from_conf_options(conf, group)
    except ks_exc.NoMatchingPlugin as err:
        raise exception.ConfigurationError(
            group=where, option='auth_type',
            reason='%s (keystoneauth1 plugins: password, v3password, token, '
            'admin_token, none, ...)' % err) from err
    except ks_exc.MissingRequiredOptions as err:
        raise exception.ConfigurationError(
            group=where, option=', '.join(
                o.dest for o in err.options), reason=str(err)) from err
    except ks_exc.OptionError as err:
        # e.g. v3applicationcredential with neither an id nor a name.
        raise ty.cast(exception.ConfigurationError,
                      auth_option_error(conf, err, group)) from err


def auth_group(conf: cfg.ConfigOpts, group: str) -> str:
    """Where the group's auth plugin options are read.

    The section ``auth_section`` names, when set (keystoneauth1 then
    reads the plugin and its options there), else the group itself.
    """
    return getattr(conf[group], 'auth_section', None) or group


def _no_auth(conf: cfg.ConfigOpts, group: str
             ) -> exception.ConfigurationError:
    """The refusal of a group that names no auth plugin."""
    section = getattr(conf[group], 'auth_section', None)
    if section:
        return exception.ConfigurationError(
            group=section, option='auth_type',
            reason='[%s] auth_section names this section, which sets no '
            'auth_type (or does not exist)' % group)
    return exception.ConfigurationError(group=group, option='auth_type',
                                        reason=_NO_AUTH[group])


def load_session(conf: cfg.ConfigOpts, group: str = opts.GLANCE_GROUP,
                 auth: ty.Any = None) -> ks_session.Session:
    """One keystoneauth1 session from a group's options.

    TLS, timeout and the auth plugin (when ``auth_type`` is set) come from
    the group.  Reuse the session for every request: it pools the HTTP
    connections.

    :param group: ``[snapshot_ext_glance]`` (the default) or
        ``[snapshot_ext_cinder]``.
    :param auth: the caller's auth plugin (inside Nova: the user's
        token) instead of the group's; the group's transport options
        still apply.
    :raises ConfigurationError: see :func:`load_auth`; or no auth plugin
        (and, for Glance, no ``endpoint_override``); or a transport
        number out of range.
    """
    _check_values(conf, group)
    if auth is None:
        auth = load_auth(conf, group)
        endpoint = getattr(conf[group], 'endpoint_override', None)
        if auth is None and not (group == opts.GLANCE_GROUP and endpoint):
            raise _no_auth(conf, group)
    _check_transport_numbers(conf, group)
    return ks_loading.load_session_from_conf_options(conf, group,
                                                     auth=auth)


#: keystoneauth1's session and adapter options that are numbers: the
#: smallest value each takes, and whether that value itself is refused
#: (keystoneauth registers them unbounded: urllib3 refuses a timeout <= 0
#: only at the first request, which then looked like an unreachable
#: service; a negative delay fails only at the first retry).
_TRANSPORT_MINIMUM = (('timeout', 0, True, 'a positive number of seconds'),
                      ('connect_retries', 0, False, '0 or more'),
                      ('status_code_retries', 0, False, '0 or more'),
                      ('connect_retry_delay', 0, False, '0 or more seconds'),
                      ('status_code_retry_delay', 0, False,
                       '0 or more seconds'))
#: The interfaces keystoneauth1 accepts in ``valid_interfaces``.
INTERFACES = ('public', 'internal', 'admin')


def _check_values(conf: cfg.ConfigOpts, group: str) -> None:
    """Refuse a value of the group that is not of its option's type.

    oslo.config parses a value only when it is read: an ``insecure =
    maybe`` or ``timeout = abc`` would otherwise fail deep in
    keystoneauth with a message naming no group (both groups have a
    ``timeout``).

    :raises ConfigurationError: naming ``[group] option``.
    """
    values = conf[group]
    for name in list(values):
        try:
            values[name]
        except (cfg.ConfigFileValueError, ValueError) as err:
            # oslo.config's text names the file by an internal repr;
            # the parser's own reason follows "is not valid: ".
            text = exception.reason_of(err)
            raise exception.ConfigurationError(
                group=group, option=name,
                reason='not a valid value: %s' % text.split(
                    ' is not valid: ', 1)[-1]) from err


def _check_transport_numbers(conf: cfg.ConfigOpts, group: str) -> None:
    """Refuse a keystoneauth number or interface of the group out of range.

    :raises ConfigurationError: naming the option (exit 2).
    """
    values = conf[group]
    for name, low, strict, wanted in _TRANSPORT_MINIMUM:
        value = getattr(values, name, None)
        if value is not None and (value < low or (strict and value == low)):
            raise exception.ConfigurationError(
                group=group, option=name,
                reason='%s is not %s' % (value, wanted))
    for interface in getattr(values, 'valid_interfaces', None) or ():
        if interface not in INTERFACES:
            raise exception.ConfigurationError(
                group=group, option='valid_interfaces',
                reason='%r is not an interface (%s)' % (
                    interface, ', '.join(INTERFACES)))


def load_adapter(conf: cfg.ConfigOpts, group: str,
                 session: ks_session.Session) -> ty.Any:
    """A keystoneauth1 adapter from the group's adapter options.

    :raises ConfigurationError: options keystoneauth refuses together
        (``interface`` with ``valid_interfaces``, ``version`` with
        ``min_version``/``max_version``), naming the group.
    """
    try:
        return ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=session.auth)
    except TypeError as err:
        reason = exception.reason_of(err)
        option = next((name for name in ('valid_interfaces', 'version')
                       if name in reason), 'interface')
        raise exception.ConfigurationError(group=group, option=option,
                                           reason=reason) from err


def load_service_auth(conf: cfg.ConfigOpts) -> ty.Any:
    """The ``[snapshot_ext_service_user]`` auth plugin, if enabled.

    :returns: a keystoneauth1 auth plugin, or ``None`` when
        ``send_service_user_token`` is false.
    :raises ConfigurationError: enabled but no ``auth_type`` set.
    """
    if not conf[opts.SERVICE_USER_GROUP].send_service_user_token:
        return None
    auth = ks_loading.load_auth_from_conf_options(conf,
                                                  opts.SERVICE_USER_GROUP)
    if auth is None:
        raise exception.ConfigurationError(
            group=opts.SERVICE_USER_GROUP, option='auth_type',
            reason='send_service_user_token is true but no auth plugin is '
            'configured for the service user')
    return auth


def with_service_token(conf: cfg.ConfigOpts, user_auth: ty.Any) -> ty.Any:
    """Wrap ``user_auth`` so a service token goes with every request.

    Like Nova's ``[service_user]``: the caller's token stays the request's
    identity (``X-Auth-Token``); the service user's token is added as
    ``X-Service-Token`` (keystoneauth1 ``ServiceTokenAuthWrapper``).  A host
    acting for many users (inside Nova) calls this on each user's auth.

    :param conf: the configuration (``[snapshot_ext_service_user]``).
    :param user_auth: the caller's keystoneauth1 auth plugin.
    :returns: the wrapper, or ``user_auth`` unchanged when the service token
        is disabled.
    :raises ConfigurationError: see :func:`load_service_auth`; or a service
        token is wanted but there is no user auth to wrap.
    """
    service_auth = load_service_auth(conf)
    if service_auth is None:
        return user_auth
    if user_auth is None:
        raise exception.ConfigurationError(
            group=opts.SERVICE_USER_GROUP, option='send_service_user_token',
            reason='a service token accompanies a user token, and no user '
            'auth is configured ([snapshot_ext_glance] auth_type) or given')
    return service_token.ServiceTokenAuthWrapper(user_auth, service_auth)


def adapter_kwargs(conf: cfg.ConfigOpts) -> dict[str, ty.Any]:
    """keystoneauth1 adapter options of ``[snapshot_ext_glance]``.

    :returns: keyword arguments for ``glanceclient.Client`` (which builds a
        keystoneauth1 ``Adapter`` from them): ``service_type``,
        ``interface``, ``region_name``, ``endpoint_override``,
        ``connect_retries``, ``status_code_retries``...
    """
    group = conf[opts.GLANCE_GROUP]
    kwargs: dict[str, ty.Any] = {
        'service_type': group.service_type or 'image',
        'service_name': group.service_name,
        'interface': group.valid_interfaces,
        'region_name': group.region_name,
        'endpoint_override': group.endpoint_override,
        'connect_retries': group.connect_retries,
        'connect_retry_delay': group.connect_retry_delay,
        'status_code_retries': group.status_code_retries,
        'status_code_retry_delay': group.status_code_retry_delay,
    }
    if group.retriable_status_codes:
        kwargs['retriable_status_codes'] = group.retriable_status_codes
    return {k: v for k, v in kwargs.items() if v is not None}
