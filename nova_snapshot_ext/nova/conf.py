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
"""

from __future__ import annotations

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
