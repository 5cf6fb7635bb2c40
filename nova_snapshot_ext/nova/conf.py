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

"""Options of the Nova integration: ``[snapshot_ext_nova]`` in nova.conf.

Registered on Nova's ``CONF`` by :func:`register_opts` when the paste
filter loads, together with the plugin's own groups
(:func:`nova_snapshot_ext.opts.register_opts`).  Importing this module
imports nothing from Nova, so ``oslo-config-generator`` can list the
options anywhere (namespace ``nova_snapshot_ext.nova``).

Before anything is registered on Nova's ``CONF``, :func:`invalid_values`
reads every plugin option from the same sources on a private
``ConfigOpts``.  oslo.config cannot unregister an option once the
configuration is parsed, and Nova logs every registered option's value at
start-up (``log_opt_values`` when ``[DEFAULT] log_options`` is true, after
the paste pipeline is loaded): an invalid value registered on Nova's
``CONF`` would make that call, and so nova-api, fail.  So a plugin option
reaches Nova's ``CONF`` only when every plugin value is valid.
"""

from __future__ import annotations

import typing as ty

from oslo_config import cfg

GROUP = 'snapshot_ext_nova'

#: ``glance_connection`` value: Nova's ``[glance]`` session and endpoint.
CONNECTION_NOVA = 'nova'
#: ``glance_connection`` value: the plugin's ``[snapshot_ext_glance]``.
CONNECTION_PLUGIN = 'snapshot_ext_glance'

nova_group = cfg.OptGroup(
    GROUP,
    title='nova-snapshot-ext inside nova-api',
    help='How the nova-snapshot-ext paste filter acts inside nova-api. '
         'These options are read from nova.conf when nova-api loads its '
         'paste pipeline; changing them needs a restart of nova-api.')

nova_opts = [
    cfg.BoolOpt(
        'activation',
        default=True,
        help='''
Take over the activation of volume-backed snapshot images.

When enabled, Nova's image-create step for a data-less image of size 0 (the
"force activate" step of a volume-backed snapshot) is done by the plugin: the
image is checked against this Glance before it is created and activated with
an honest payload this Glance accepts. Every other image operation of Nova is
unchanged.

Related options:

* ``[snapshot_ext] driver``, ``[snapshot_ext] disk_formats``
'''),
    cfg.BoolOpt(
        'early_refusal',
        default=True,
        help='''
Check ``createImage`` of a volume-backed server before Nova snapshots a volume.

When enabled, ``POST /servers/{id}/action`` with ``createImage`` for a
volume-backed server runs the plugin's preflight (property names and values,
quota, allowed formats) first and answers 400/403/409 like Nova's API, so no
Cinder snapshot is taken for an image Glance would refuse. Any unexpected
error in this check is logged and the request goes on to Nova unchanged.
'''),
    cfg.StrOpt(
        'glance_connection',
        default=CONNECTION_NOVA,
        choices=[
            (CONNECTION_NOVA,
             "Nova's [glance] session options (TLS, timeout) and endpoint "
             "(api_servers, endpoint_override or the service catalog), "
             "exactly as Nova's own image calls use them"),
            (CONNECTION_PLUGIN,
             'The [snapshot_ext_glance] session and adapter options'),
        ],
        help='''
Which configuration reaches Glance for the snapshot image.

Either way every request carries the identity of the user who asked for the
snapshot (the token of Nova's request context, wrapped with a service token
when ``[service_user] send_service_user_token`` is true) and Nova's global
request id.
'''),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register ``[snapshot_ext_nova]`` on ``conf`` (idempotent).

    :param conf: Nova's ``nova.conf.CONF`` (or a test's ``ConfigOpts``).
    """
    conf.register_group(nova_group)
    conf.register_opts(nova_opts, group=nova_group)


def list_opts() -> list[tuple[cfg.OptGroup, list[cfg.Opt]]]:
    """Options for ``oslo-config-generator``.

    :returns: ``[(OptGroup('snapshot_ext_nova'), [Opt, ...])]``.
    """
    return [(nova_group, nova_opts)]


def plugin_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Every option group of the plugin and its options.

    :returns: ``[(group name, [Opt, ...]), ...]``: the core, Glance,
        service token and every installed driver's group
        (:func:`nova_snapshot_ext.opts.list_opts`), then
        ``[snapshot_ext_nova]``.
    """
    from nova_snapshot_ext import opts

    # The sample-config listing also shows the options of the ``password``
    # auth plugin, some of them required; which auth plugin's options
    # apply is keystoneauth's to check when it loads the plugin, so
    # required ones are not judged here (a missing one is not a bad
    # value, and must not make the whole check fail).
    return [(group.name, [o for o in group_opts if not o.required])
            for group, group_opts in opts.list_opts() + list_opts()]


def _sources(conf: ty.Any) -> tuple[list[str], list[str]]:
    """The config files and directories ``conf`` was parsed from."""
    found = []
    for name in ('config_file', 'config_dir'):
        try:
            value = conf[name]
        except (cfg.NoSuchOptError, cfg.Error, AttributeError):
            value = None
        if isinstance(value, str):
            value = [value]
        found.append([v for v in (value or []) if v])
    return found[0], found[1]


def invalid_values(conf: ty.Any) -> list[str]:
    """Every plugin option whose configured value is not valid.

    The files and directories ``conf`` was parsed from (its
    ``config_file`` and ``config_dir``, e.g. nova-api's
    ``[api-paste.ini, nova.conf]``) and the ``OS_<GROUP>__<OPTION>``
    environment variables are read again into a private
    ``oslo_config.cfg.ConfigOpts`` holding only the plugin's options
    (:func:`plugin_opts`); every value is then converted by its option
    type (booleans, choices, integer ranges...).  Nothing is registered on
    ``conf``.

    :param conf: Nova's ``CONF``, already parsed (or any ``ConfigOpts``).
    :returns: one sentence per bad value, e.g. ``"[snapshot_ext_nova]
        activation = 'maybe' (/etc/nova/nova.conf): Unexpected boolean
        value 'maybe'"``; empty when every value is valid.
    """
    files, dirs = _sources(conf)
    private = cfg.ConfigOpts()
    for group, group_opts in plugin_opts():
        private.register_opts(group_opts, group=group)
    try:
        private(args=[], project=getattr(conf, 'project', None),
                default_config_files=files, default_config_dirs=dirs,
                validate_default_values=True)
    except cfg.Error as err:
        # Nova parsed these sources already, so this is rare (a file
        # removed since): report it as the reason.
        return ['the configuration cannot be read again: %s' % err]
    bad = []
    for group, group_opts in plugin_opts():
        for opt in group_opts:
            try:
                private[group][opt.dest]
            except (cfg.ConfigFileValueError, ValueError) as err:
                bad.append(_describe(files, dirs, group, opt, err))
    return bad


def _describe(files: list[str], dirs: list[str], group: str, opt: cfg.Opt,
              err: Exception) -> str:
    """``[group] name = 'raw' (where): reason`` for one bad value."""
    raw = cfg.ConfigOpts()
    raw.register_opt(cfg.StrOpt(opt.dest), group=group)
    where = ''
    try:
        raw(args=[], default_config_files=files, default_config_dirs=dirs)
        value = ' = %r' % (raw[group][opt.dest],)
        location = raw.get_location(opt.dest, group)
        if location is not None and location.detail:
            where = ' (%s)' % location.detail
    except (cfg.Error, ValueError):
        value = ''
    reason = str(err)
    # oslo.config's message repeats the option and its source; keep the
    # reason at its end ("... is not valid: <reason>").
    marker = 'is not valid: '
    if marker in reason:
        reason = reason.split(marker, 1)[1]
    return '[%s] %s%s%s: %s' % (group, opt.dest, value, where, reason)
