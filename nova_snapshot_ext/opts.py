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

"""Every option of nova-snapshot-ext.

Nothing is registered at import time: a host calls :func:`register_opts`
with its own :class:`oslo_config.cfg.ConfigOpts` (inside Nova that is
Nova's ``CONF``, so the sections below live in ``nova.conf``).

Groups (none collides with Nova's own ``[glance]`` or ``[DEFAULT]``):

``[snapshot_ext]``
    core behaviour (driver, inheritance, preflight limits, activation).
``[snapshot_ext_glance]``
    how to reach Glance: keystoneauth1 session, adapter
    (``service_type = image``) and auth plugin options.
``[snapshot_ext_<driver>]``
    one group per hypervisor driver, published from the driver class.
"""

from __future__ import annotations

import typing as ty

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

CORE_GROUP = 'snapshot_ext'
GLANCE_GROUP = 'snapshot_ext_glance'

core_group = cfg.OptGroup(
    CORE_GROUP,
    title='nova-snapshot-ext core options',
    help='How volume-backed snapshot images are built, checked and '
         'activated in Glance.')

glance_group = cfg.OptGroup(
    GLANCE_GROUP,
    title='Glance connection for nova-snapshot-ext',
    help='keystoneauth1 session, adapter and auth options used to reach '
         'the image service. With no auth_type set, requests carry the '
         'caller\'s token (inside Nova: the user\'s request context).')

core_opts = [
    cfg.StrOpt(
        'driver',
        help='''
Hypervisor driver that decides which disk formats the activation payload may
use and which image properties are stamped.

Possible values:

* A driver name from the ``nova_snapshot_ext.drivers`` entry point namespace:
  ``libvirt``, ``vmwareapi``, ``hyperv``, ``xenapi``, ``ironic``, ``zvm``,
  ``fake``.
* Unset (default): inferred from Nova's ``[DEFAULT] compute_driver`` when that
  option is registered in the same configuration, else ``libvirt``.
'''),
    cfg.ListOpt(
        'non_inheritable_image_properties',
        default=['cache_in_nova', 'bittorrent'],
        help='''
Image properties of the server that are not copied onto its snapshot image.

This list adds to the keys that are never inherited whatever it says (the
``os_glance`` namespace, encryption key and image signature properties,
ownership and Glance-internal attributes). The default is Nova's default for
``[DEFAULT] non_inheritable_image_properties``.
'''),
    cfg.IntOpt(
        'image_property_quota',
        default=128,
        min=-1,
        help='''
Largest number of properties an image may carry in the target Glance.

Glance's ``image_property_quota`` (default 128) cannot be discovered through
its API, so set this to the same value. Keys in the ``os_glance`` namespace do
not count. ``-1`` disables the check.
'''),
    cfg.IntOpt(
        'capabilities_cache_ttl',
        default=300,
        min=0,
        help='''
Seconds for which the discovered Glance capabilities (image schema, API
versions, stores) are reused. A refusal that shows the schema changed drops
the cache at once. ``0`` discovers before every snapshot.
'''),
    cfg.FloatOpt(
        'activation_timeout',
        default=60.0,
        min=1.0,
        help='Seconds to wait for a snapshot image to become active after '
             'its payload or location was accepted.'),
    cfg.FloatOpt(
        'activation_poll_interval',
        default=0.5,
        min=0.05,
        help='Seconds between two reads of an image while waiting for it to '
             'become active.'),
    cfg.ListOpt(
        'disk_formats',
        default=[],
        help='''
Disk formats the activation plan may use, in the order to try them.

Possible values:

* Empty (default): zero-length ``raw`` first when this Glance allows it, then
  the driver's readable formats in its preference order.
* A list of Glance disk_format names, e.g. ``raw,vhd``: only these, in this
  order, and only those this Glance allows and the driver reads.

Related options:

* ``[snapshot_ext] driver``
'''),
]


def _ks_opts() -> list[cfg.Opt]:
    """keystoneauth1 session + adapter + auth options, deduplicated."""
    opts: dict[str, cfg.Opt] = {}
    for opt in (ks_loading.get_session_conf_options() +
                ks_loading.get_adapter_conf_options(include_deprecated=False) +
                ks_loading.get_auth_common_conf_options()):
        opts.setdefault(opt.dest, opt)
    return list(opts.values())


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register every core and Glance-connection option on ``conf``.

    Idempotent.  Driver options are registered by the driver itself when it
    is constructed (see :mod:`nova_snapshot_ext.driver`).

    :param conf: the host's configuration object.
    """
    conf.register_group(core_group)
    conf.register_opts(core_opts, group=core_group)
    conf.register_group(glance_group)
    ks_loading.register_session_conf_options(conf, GLANCE_GROUP)
    ks_loading.register_adapter_conf_options(
        conf, GLANCE_GROUP, include_deprecated=False)
    ks_loading.register_auth_conf_options(conf, GLANCE_GROUP)
    conf.set_default('service_type', 'image', group=GLANCE_GROUP)
    conf.set_default('valid_interfaces', ['internal', 'public'],
                     group=GLANCE_GROUP)


def _driver_opts() -> list[tuple[cfg.OptGroup, list[cfg.Opt]]]:
    # Imported here so that importing opts.py scans no entry points.
    from nova_snapshot_ext import driver as driver_mod

    return [(cls.opt_group(), cls.CONFIG_OPTS)
            for cls in driver_mod.driver_classes().values()
            if cls.CONFIG_OPTS]


def list_opts() -> list[tuple[cfg.OptGroup, list[cfg.Opt]]]:
    """Options for ``oslo-config-generator`` (namespace nova_snapshot_ext).

    :returns: ``[(OptGroup, [Opt, ...]), ...]``: the core group, the Glance
        connection group (keystoneauth1 session, adapter and auth options,
        with ``service_type`` defaulting to ``image``) and one group per
        installed driver, sorted by driver name.
    """
    return ([(core_group, core_opts), (glance_group, _ks_opts())] +
            _driver_opts())


def set_defaults(conf: cfg.ConfigOpts, **overrides: ty.Any) -> None:
    """Change defaults of ``[snapshot_ext]`` options for a consumer.

    :param conf: a configuration object on which :func:`register_opts` ran.
    :param overrides: option name to new default.
    :raises oslo_config.cfg.NoSuchOptError: for an unknown option name.
    """
    for name, value in overrides.items():
        conf.set_default(name, value, group=CORE_GROUP)
