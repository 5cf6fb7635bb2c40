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

"""The configuration files' checks, before anything reaches the network.

Option values (:func:`check_option_values`, :func:`check_configuration`),
the files read and the options they set (:func:`config_files`,
:func:`options_set`), and typos in the ``[snapshot_ext*]`` sections
(:func:`unknown_options`, :func:`section_hints`).
"""

from __future__ import annotations

import configparser
import difflib
import os
import re
import typing as ty

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from nova_snapshot_ext.cmd import connection
from nova_snapshot_ext.cmd import errors
from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import service as service_mod


_VALUE_ERROR_RE = re.compile(r'^(?:Default )?[Vv]alue for option \S+ (.*)$',
                             re.S)


def check_option_values(conf: cfg.ConfigOpts) -> None:
    """Read every registered option now, naming ``[group] option`` at fault.

    oslo.config checks a value only when it is read, and its message names
    the option and the file but not the section (``Value for option
    timeout in f.conf is not valid``): the same name lives in several
    sections.  Reading all of them here, before any network step, turns a
    bad value into one error naming the section.

    :raises ConfigurationError: exit 2.
    """
    def read(group: str | None, name: str, get: ty.Callable[[], ty.Any]
             ) -> ty.Any:
        try:
            return get()
        except (cfg.Error, ValueError) as err:
            # "Value for option timeout in f.conf is not valid: ..."
            text = errors.clean_message(str(err))
            match = _VALUE_ERROR_RE.match(text)
            raise exception.ConfigurationError(
                group=group or 'DEFAULT', option=name,
                reason=match.group(1) if match else text) from err

    for name in list(conf):
        value = read(None, name, lambda: conf[name])
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for option in list(value):
                read(name, option, lambda: value[option])


def check_configuration(conf: cfg.ConfigOpts) -> None:
    """Everything about the configuration that needs no network.

    Run before :func:`connect`, so a typo is named as one (exit 2) and not
    hidden behind a later network error: every option's value
    (:func:`check_option_values`), the ``[snapshot_ext]`` rules of
    :func:`~nova_snapshot_ext.snapshot.service.check_options`, and the
    driver (``[snapshot_ext] driver`` names an installed one; its
    ``[snapshot_ext_<driver>]`` options are valid), and the
    ``[snapshot_ext_glance]`` auth plugin (``auth_type`` names an installed
    keystoneauth plugin, which registers its options).

    :raises ConfigurationError: a bad value, naming ``[group] option``.
    :raises DriverNotFound: ``[snapshot_ext] driver`` names no installed
        driver (the message lists the installed ones).
    :raises DriverLoadError: the driver cannot be loaded.
    """
    service_mod.check_options(conf)
    check_option_values(conf)
    driver_mod.load_driver(conf)
    connection.check_auth_configuration(conf)
    # Again: the driver's and the auth plugin's options, registered just
    # now by loading them.
    check_option_values(conf)


def section_hints(conf: cfg.ConfigOpts) -> list[str]:
    """Unknown ``[snapshot_ext*]`` sections and options, with "did you mean".

    The one home of that hint (:func:`unknown_options` over every group
    this program knows): ``probe``, ``snapshot``, ``audit`` print it as
    warnings; the upgrade check puts it in "Plugin options".
    """
    return unknown_options(conf, known_groups())


#: The groups that load a keystoneauth1 auth plugin (its options are
#: known only from the plugin ``auth_type`` names).
AUTH_GROUPS = (opts.GLANCE_GROUP, opts.SERVICE_USER_GROUP, opts.CINDER_GROUP)


def _known_options(conf: cfg.ConfigOpts, group: str,
                   listed: ty.Collection[str]) -> set[str] | None:
    """The option names ``group`` accepts, or ``None`` when unknowable.

    ``None``: the group's ``auth_type`` names no installed keystoneauth
    plugin, so which options it takes is unknown.
    """
    names: set[str] = set(listed)
    try:
        names |= {name for name in conf[group]}
    except (cfg.NoSuchGroupError, cfg.NoSuchOptError, KeyError):
        pass
    if group in AUTH_GROUPS:
        auth_type = None
        try:
            auth_type = conf[group].auth_type
        except (cfg.NoSuchOptError, KeyError, AttributeError):
            pass
        if auth_type:
            try:
                names |= {o.dest for o in
                          ks_loading.get_auth_plugin_conf_options(auth_type)}
            except ks_exc.NoMatchingPlugin:
                # The auth_type error names the fault; the plugin's
                # options cannot be told from unknown ones.
                return None
    return {n.replace('-', '_') for n in names}


def config_files(conf: cfg.ConfigOpts) -> list[str]:
    """The files oslo.config read (``--config-file`` and config dirs)."""
    files = list(conf.config_file or [])
    for directory in conf.config_dir or []:
        if os.path.isdir(directory):
            files += sorted(os.path.join(directory, f)
                            for f in os.listdir(directory)
                            if f.endswith('.conf'))
    return files


def _parsed_files(conf: cfg.ConfigOpts
                  ) -> ty.Iterator[tuple[str, configparser.RawConfigParser]]:
    """Each readable file of :func:`config_files`, parsed as written.

    Sections and keys as the operator wrote them, options this program
    has not registered (an auth plugin's, a misspelled one) included.
    """
    for path in config_files(conf):
        parser = configparser.RawConfigParser(
            strict=False, default_section='\x00none')
        try:
            parser.read(path, encoding='utf-8')
        except (configparser.Error, UnicodeDecodeError):
            continue
        yield path, parser


def options_set(conf: cfg.ConfigOpts, group: str) -> list[str]:
    """The option names given a value for ``group``, however spelled.

    Keys of its section in the files (registered or not: an auth
    plugin's options while ``auth_type`` is unset, a misspelled name)
    and ``OS_<GROUP>__<OPTION>`` environment variables, as oslo.config
    reads them.

    :returns: sorted names, lower case, ``-`` read as ``_``.
    """
    names = set()
    for _path, parser in _parsed_files(conf):
        if parser.has_section(group):
            names.update(parser.options(group))
    prefix = 'OS_%s__' % group.upper()
    names.update(key[len(prefix):] for key in os.environ
                 if key.startswith(prefix))
    return sorted({n.lower().replace('-', '_') for n in names})


def known_groups() -> dict[str, set[str]]:
    """Every option group of the plugin, Nova's included -> option names."""
    from nova_snapshot_ext.nova import conf as nova_conf

    return {group.name: {o.dest for o in group_opts}
            for group, group_opts in (opts.list_opts() +
                                      nova_conf.list_opts())}


def unknown_options(conf: cfg.ConfigOpts,
                    groups: ty.Mapping[str, ty.Collection[str]]
                    ) -> list[str]:
    """Warnings for unknown ``[snapshot_ext*]`` sections and options.

    :param groups: every group this program knows -> its option names
        (the auth plugin's options are added from ``auth_type``).
    :returns: one message per unknown section or option, with the file and
        a close known name when there is one.
    """
    known_groups = set(groups)
    found: list[str] = []
    for path, parser in _parsed_files(conf):
        for section in parser.sections():
            norm = section.lower()
            close = difflib.get_close_matches(norm, sorted(known_groups),
                                              n=1, cutoff=0.8)
            if section not in known_groups:
                if norm.startswith(('snapshot_ext', 'snapshot-ext')) or (
                        close and norm not in ('glance', 'service_user')):
                    found.append('%s: unknown section [%s]%s' % (
                        path, section, ' (did you mean [%s]?)' % close[0]
                        if close else ''))
                continue
            if not section.startswith(opts.CORE_GROUP):
                continue
            known = _known_options(conf, section, groups[section])
            if known is None:
                continue
            for key in parser.options(section):
                if key.replace('-', '_') in known:
                    continue
                owners = _auth_plugins_with(conf, section, key)
                if owners:
                    # An auth plugin's option while auth_type is unset:
                    # known, only unused -- say that, not "unknown".
                    found.append(
                        '%s: [%s] %s is ignored: no auth_type is set (it is '
                        'an option of auth_type %s)' % (
                            path, section, key, ', '.join(owners)))
                    continue
                near = difflib.get_close_matches(key, sorted(known),
                                                 n=1, cutoff=0.75)
                found.append('%s: unknown option [%s] %s%s' % (
                    path, section, key, ' (did you mean %s?)' % near[0]
                    if near else ''))
    return found


#: At most this many auth plugins are named for an ignored option.
_OWNERS_SHOWN = 3


def _auth_plugins_with(conf: cfg.ConfigOpts, group: str,
                       key: str) -> list[str]:
    """The installed auth plugins taking option ``key``, when unused.

    Only for an auth group whose ``auth_type`` is unset (else the
    plugin's options are known and any other is unknown).
    """
    if group not in AUTH_GROUPS:
        return []
    try:
        if conf[group].auth_type:
            return []
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError, KeyError,
            AttributeError):
        return []
    name = key.replace('-', '_')
    owners = []
    for plugin in sorted(ks_loading.get_available_plugin_names()):
        try:
            options = ks_loading.get_auth_plugin_conf_options(plugin)
        except Exception:  # noqa: B902 - a plugin that fails to load
            continue
        if any(o.dest == name for o in options):
            owners.append(plugin)
    if len(owners) > _OWNERS_SHOWN:
        owners = owners[:_OWNERS_SHOWN] + ['...']
    return owners
