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
``[snapshot_ext_service_user]``
    an optional service token sent with every Glance request (like
    Nova's ``[service_user]``), for the location API.
``[snapshot_ext_<driver>]``
    one group per hypervisor driver, published from the driver class.
"""

from __future__ import annotations

import copy
import typing as ty

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

CORE_GROUP = 'snapshot_ext'
GLANCE_GROUP = 'snapshot_ext_glance'
SERVICE_USER_GROUP = 'snapshot_ext_service_user'
CINDER_GROUP = 'snapshot_ext_cinder'

#: ``[snapshot_ext] activation_method`` values.
ACTIVATION_METHODS = ('upload', 'location-first', 'location-fallback')
#: ``[snapshot_ext] location_api`` values.
LOCATION_APIS = ('auto', 'new', 'legacy')
#: ``os_hash_algo`` values Glance's location API accepts.
HASH_ALGOS = ('sha512', 'sha256', 'sha1', 'md5')

core_group = cfg.OptGroup(
    CORE_GROUP,
    title='nova-snapshot-ext core options',
    help='How volume-backed snapshot images are built, checked and '
         'activated in Glance.')

glance_group = cfg.OptGroup(
    GLANCE_GROUP,
    title='Glance connection for nova-snapshot-ext',
    help="""
keystoneauth1 session, adapter and auth options used to reach the image
service. With no auth_type set, requests carry the caller's token (inside
Nova: the user's request context).

Defaults chosen for a snapshot (keystoneauth1's own options, not a loop of
the plugin):

* ``timeout = 60``: seconds to wait for an answer; without it a Glance that
  accepts the connection and never answers hangs a snapshot forever.
* ``connect_retries = 3``, ``status_code_retries = 3``,
  ``retriable_status_codes = 502,503,504``: a connection failure or one of
  those statuses is re-sent with exponential backoff, for the requests a
  second send cannot harm only (GET, HEAD; and the image create, which
  carries the snapshot's own image id so a second send meets 409 and is
  read back). An upload or a location POST is sent once; when its answer
  is lost the plugin reads the image back before it decides. A DELETE is
  sent once as well: the plugin reads the image's status before every
  delete of its own, and a blind re-send could delete an image a
  concurrent try activated meanwhile.
""")

service_user_group = cfg.OptGroup(
    SERVICE_USER_GROUP,
    title='Service token for nova-snapshot-ext',
    help='''
An identity whose token is sent as ``X-Service-Token`` next to the caller's
own token on every Glance request, as Nova's ``[service_user]`` does. Glance
lets a member of the image's owner project add an ``http(s)`` location; other
callers, and locations of other stores, need the ``service`` role, which the
service token carries. Only used when ``send_service_user_token`` is true.
''')

service_user_opts = [
    cfg.BoolOpt(
        'send_service_user_token',
        default=False,
        help='''
Send a service token (from this group's auth options) with every Glance
request, next to the caller's token.

Glance 31 checks the ``service`` role in the service token only; Glance 29,
30 and 32+ also accept it in the caller's own token.

Related options:

* ``[snapshot_ext] activation_method``
* the keystoneauth1 auth options of this group (``auth_type``, ...)
'''),
]

location_opts = [
    cfg.StrOpt(
        'activation_method',
        default='upload',
        choices=[
            ('upload', 'only upload honest payloads; never use a location'),
            ('location-first', 'try the location first, then the uploads'),
            ('location-fallback', 'try the uploads first; use the location '
             'only after Glance refused every upload format'),
        ],
        help='''
How a snapshot image is activated and in which order.

With a location, Glance reads the object at ``[snapshot_ext] location_url``
(an http store, read-only) instead of receiving an upload; the image's size
and hashes are the object's.

In ``location-first`` mode any reason the location cannot be used (empty or
unreachable object, no read-only store in this Glance, ...) refuses the
snapshot in preflight, before anything is created. In ``location-fallback``
mode the location attempt is then dropped from the plan with a warning, and
the refusal happens only when no upload is possible either.

Related options:

* ``[snapshot_ext] location_url``, ``location_disk_format``,
  ``location_api``, ``location_hash_algo``, ``location_validation_data``
* ``[snapshot_ext_service_user]``
'''),
    cfg.StrOpt(
        'location_url',
        secret=True,
        help='''
URL of a small, non-empty, read-only object used as the location of every
snapshot image activated through a location.

The object must be exactly what ``[snapshot_ext] location_disk_format``
says, e.g. the plugin's own valid empty qcow2 image (1536 bytes, see
``nova_snapshot_ext.image.payloads``) served by a web server that Glance's
http store can reach (``[import_filtering_opts]`` of Glance must allow its
host and port). It is shared by many images, so it must never change and
must live on a store Glance cannot delete from: only ``http`` and ``https``
URLs are accepted, never ``file://``, ``swift+config://``, ``rbd://`` etc.
Before first use the plugin downloads the object once to check that it is
non-empty and of the declared format, and to hash it. The value is a secret:
its user info and query string are never logged.

Possible values:

* ``http://host[:port]/path`` or ``https://...``
* Unset (default): no location attempt is possible.

Related options:

* ``[snapshot_ext] activation_method``
* ``[snapshot_ext] location_disk_format``
'''),
    cfg.StrOpt(
        'location_disk_format',
        default='raw',
        help='''
Glance ``disk_format`` of the object at ``[snapshot_ext] location_url``.

It must be true of the object's content: the plugin inspects the object with
``oslo.utils``' format inspector and refuses a mismatch. ``raw`` fits any
content no other format recognises (but not an empty object: a location must
be larger than 0 bytes). Formats without an inspector (``ploop``, ``ami``,
``aki``, ``ari``) are refused.

Possible values:

* ``raw``, ``qcow2``, ``vmdk``, ``vhd``, ``vhdx``, ``vdi``, ``iso``

Related options:

* ``[snapshot_ext] location_url``
'''),
    cfg.StrOpt(
        'location_hash_algo',
        default='sha512',
        choices=[(algo, 'send %s validation data' % algo)
                 for algo in HASH_ALGOS] + [
            ('none', 'send no validation data')],
        help='''
Hash the plugin computes over the object (it downloads it once anyway, to
check its size and format) and sends as ``validation_data`` with every
location it adds.

With validation data Glance (``do_secure_hash = true``, its default) reads the
object and activates the image only if the hash matches, so an object that
changed is refused and the image is active with its hashes already set
(without it Glance activates at once and hashes in the background). The
legacy API accepts only Glance's ``[DEFAULT] hashing_algorithm`` (default
``sha512``).

Possible values:

* ``sha512`` (default), ``sha256``, ``sha1``, ``md5``
* ``none``: send no validation data.

Related options:

* ``[snapshot_ext] location_validation_data`` (takes precedence)
'''),
    cfg.StrOpt(
        'location_validation_data',
        help='''
Expected hash of the object, ``<os_hash_algo>:<hex digest>``, e.g.
``sha512:ab12...``. When set, the object the plugin downloads must have this
hash (else preflight refuses it) and this value is sent as validation data.
Pins the object's content.

Related options:

* ``[snapshot_ext] location_hash_algo``
'''),
    cfg.StrOpt(
        'location_api',
        default='auto',
        choices=[
            ('auto', 'the service location API when Glance lists API v2.17, '
             'else the legacy one; when v2.17 turns out to be missing at '
             'run time (HTTP 501), the legacy one next'),
            ('new', 'only ``POST /v2/images/{id}/locations`` (API 2.17, '
             'Glance 2024.2+)'),
            ('legacy', 'only the JSON-patch ``add /locations/-`` (needs '
             "Glance's deprecated ``show_multiple_locations = true``)"),
        ],
        help='''
Which Glance API adds the location.

The new API is asynchronous: the plugin polls the image until it is active or
its ``location_import`` task failed. The legacy API is synchronous, computes
no hash, and is refused (HTTP 403) unless Glance runs with
``show_multiple_locations = true``, which cannot be discovered without
trying.

Related options:

* ``[snapshot_ext] activation_method``
'''),
]

#: The help of ``[snapshot_ext] driver``; ``%(installed)s`` lists the
#: installed drivers in the options reference (:func:`list_opts`).
DRIVER_HELP = '''
Hypervisor driver that decides which disk formats the activation payload may
use and which image properties are stamped.

Possible values:

* A driver name from the ``nova_snapshot_ext.drivers`` entry point
  namespace%(installed)s.
* Unset (default): inferred from Nova's ``[DEFAULT] compute_driver`` when that
  option is registered in the same configuration and a driver serves it;
  else ``libvirt`` is guessed for its disk formats and no ``hypervisor_type``
  or ``vm_mode`` is stamped (a warning says so).
'''

core_opts = [
    cfg.StrOpt(
        'driver',
        help=DRIVER_HELP % {'installed': ''}),
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
        'image_tag_quota',
        default=128,
        min=-1,
        help='''
Largest number of tags an image may carry in the target Glance.

The plugin tags every image with one tag per volume snapshot it names (the
rotation finds them by these tags). Glance's ``image_tag_quota`` (default 128)
cannot be discovered through its API, so set this to the same value: a
snapshot of a server with more volumes is refused before anything is created.
``-1`` disables the check.
'''),
    cfg.BoolOpt(
        'rotation_full_scan',
        default=False,
        help='''
Before a backup rotation deletes a rotated backup's volume snapshots, read
every image the caller can see (hidden ones too) and keep any volume snapshot
one of them names, instead of asking Glance only for the images tagged with
that snapshot.

The tag query costs the same whatever the number of images; the full scan
grows with every image the project and the public see. A rotation that
deletes a backup made before the plugin tagged its images scans fully anyway.
Images copied by hand from a plugin image carry no tag: ``audit`` reports them
(``untagged-snapshot-reference``); set this option to protect their volume
snapshots at every rotation instead.
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
        'request_timeout',
        default=120.0,
        min=1.0,
        max=3600.0,
        help='''
Seconds one Glance request may take in total, from sending it to the last
byte of its answer.

``[snapshot_ext_glance] timeout`` (keystoneauth1) bounds each read of the
socket only: an answer that trickles in, one byte at a time, never trips it.
This deadline does: the connection is closed when it passes and the answer is
treated as lost (the image is read back). Keep it above
``[snapshot_ext_glance] timeout``.

Related options:

* ``[snapshot_ext] snapshot_timeout``
'''),
    cfg.FloatOpt(
        'snapshot_timeout',
        default=300.0,
        min=10.0,
        max=86400.0,
        help='''
Seconds one snapshot may take in total, from the first Glance request to
the last.

When it passes, no new image is created and no payload or location is sent;
a request in flight is cut; what the snapshot created and did not activate
is then cleaned up (each cleanup request bounded by ``request_timeout``) and
the error says the deadline passed. An image already active stays the
snapshot's result.

Related options:

* ``[snapshot_ext] request_timeout``
* ``[snapshot_ext] activation_timeout``
'''),
    cfg.FloatOpt(
        'activation_poll_interval',
        default=0.5,
        min=0.05,
        help='Seconds between two reads of an image while waiting for an '
             'upload another try of the same snapshot made to finish. A '
             'location import is read on its own schedule: first when the '
             'import is expected to be done (learnt from earlier imports), '
             'then each time the wait has grown by 30 %.'),
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
* ``[snapshot_ext] driver_formats_only``
'''),
    cfg.BoolOpt(
        'driver_formats_only',
        default=False,
        help='''
Keep the activation plan to the formats the driver reads.

A volume-backed snapshot image boots from its volume mappings: Nova never
reads its payload (it skips the image's disk_format checks for a
volume-backed boot). So by default, after ``raw`` and the driver's own
formats, the plan also tries every other format this Glance allows and the
plugin can make an honest empty image of, smallest first (a WARNING and a
note in the result say when one is used). Set this to true to refuse
instead when none of the driver's formats is possible.

Has no effect when ``[snapshot_ext] disk_formats`` is set: that list is
always the limit.
'''),
]


#: Backups of volume-backed servers (doc/source/backups.rst).
backup_opts = [
    cfg.BoolOpt(
        'volume_backed_backups',
        default=False,
        help='''
Take Nova's ``createBackup`` for volume-backed servers.

Nova refuses it ("Backup is not supported for volume-backed instances",
HTTP 400). When true, the paste filter answers it instead: Nova's own
quiesce and volume snapshots, the plugin's image record (marked
``image_type=backup`` with ``backup_type`` and this server's
``instance_uuid``), preflight and activation, then the rotation: the
``rotation`` newest backups of this server and ``backup_type`` are kept,
older ones the plugin can prove are this server's backups are deleted with
the Cinder volume snapshots no other image names. When false (default),
Nova's 400 is unchanged.
'''),
    cfg.BoolOpt(
        'backup_copies',
        default=False,
        help='''
Copy every backup off the primary storage with cinder-backup.

When true, once a backup image is active (nova-api's ``createBackup`` with
``volume_backed_backups``, and the ``backup`` command), the plugin asks
Cinder for one backup of each volume snapshot the image names, once it is
available (see ``backup_copies_wait``; nova-api asks in the background,
after its answer, and rotates the backup images there, after the copies),
incremental when the volume already has an available backup. Nothing waits
for the copies themselves but the rotation of a backup still being copied
(Cinder cannot delete its snapshots until then); each is recorded in its
Cinder backup metadata (the image, the server, the backup type, the disk's
device name and boot index), and
``nova-snapshot-ext restore`` restores a server from them even when the
image and its volume snapshots are gone. A copy that cannot be requested
is logged (WARNING) and, in the ``backup`` command's report, named.

Needs cinder-backup in the cloud and Cinder's backup policy for the
server's owner (doc/source/backups.rst).

Related options:

* ``[snapshot_ext] volume_backed_backups``
'''),
    cfg.IntOpt(
        'backup_copies_wait',
        default=300,
        min=1,
        help='''
Seconds a backup's copies wait for its volume snapshots.

Cinder copies only an ``available`` volume snapshot, and Nova (as the
plugin inside nova-api) answers ``createBackup`` before Cinder has made
them. nova-api asks for the copies in the background once the snapshots
are available, waiting at most this long for all of a backup's; a
snapshot still ``creating`` after it is not copied and is named in a
WARNING. The ``backup`` command waits the same before it reports. It also
bounds how long the copies' retention waits for the copies it deletes, and
how long nova-api's rotation waits for an older backup whose snapshots are
still being copied (it is then left for the next rotation, named).

Related options:

* ``[snapshot_ext] backup_copies``
'''),
    cfg.IntOpt(
        'backup_copies_chain',
        default=6,
        min=0,
        help='''
Incremental copies of a volume in a row before the next full copy.

An incremental copy needs every copy back to its chain's full copy, so
the copies' retention can delete a chain only once none of its copies is
kept. A bound lets old chains go: after this many incremental copies of
a volume, its next copy is full. 0 makes every copy full.

Related options:

* ``[snapshot_ext] backup_copies_keep``
'''),
    cfg.IntOpt(
        'backup_copies_keep',
        default=0,
        min=0,
        help='''
Copy sets kept per server and backup type (0: every one).

After each backup's copies, the copies of that server and backup type
beyond the newest this many backups are deleted, newest first, except
those a kept incremental copy needs (named in the log). Independent of
the images' ``rotation``: rotating an image never deletes a copy. The
newest restorable set is always kept.

Related options:

* ``[snapshot_ext] backup_copies_max_age``
* ``[snapshot_ext] backup_copies_chain``
'''),
    cfg.IntOpt(
        'backup_copies_max_age',
        default=0,
        min=0,
        help='''
Days a copy set is kept (0: no age limit).

Copy sets of a server and backup type older than this are deleted after
its next backup's copies, as with ``backup_copies_keep`` (either limit
deletes a set); the newest restorable set is always kept.
'''),
]

cinder_group = cfg.OptGroup(
    CINDER_GROUP,
    title='Cinder connection for nova-snapshot-ext backups',
    help='''
keystoneauth1 session, adapter and auth options used by the standalone
``backup`` command and library to delete the Cinder volume snapshots of
rotated backups (``service_type = block-storage``; ``volumev3`` in the
catalog matches). Without an auth plugin here, the rotation deletes the
images only and names the volume snapshots it left. Inside Nova the
user's request context is used, as Nova's own Cinder API does.
''')

#: The plugin's defaults for keystoneauth1 adapter options of
#: ``[snapshot_ext_cinder]``.
CINDER_DEFAULTS: dict[str, ty.Any] = {
    'service_type': 'block-storage',
    'interface': 'internal',
    'connect_retries': 3,
}


#: The plugin's defaults for keystoneauth1 options of
#: ``[snapshot_ext_glance]`` (see the group help).
GLANCE_DEFAULTS: dict[str, ty.Any] = {
    'service_type': 'image',
    'valid_interfaces': ['internal', 'public'],
    'timeout': 60,
    'connect_retries': 3,
    'status_code_retries': 3,
    'retriable_status_codes': [502, 503, 504],
}


def _ks_opts() -> list[cfg.Opt]:
    """keystoneauth1 session + adapter + auth options, deduplicated.

    keystoneauth1 builds new option objects on every call; the plugin's
    defaults (:data:`GLANCE_DEFAULTS`) are set on these copies so the
    sample configuration shows them.
    """
    opts: dict[str, cfg.Opt] = {}
    for opt in (ks_loading.get_session_conf_options() +
                ks_loading.get_adapter_conf_options(include_deprecated=False) +
                ks_loading.get_auth_common_conf_options()):
        opts.setdefault(opt.dest, opt)
    for name, value in GLANCE_DEFAULTS.items():
        if name in opts:
            opts[name].default = value
    return list(opts.values())


def _fresh(group: cfg.OptGroup) -> cfg.OptGroup:
    """A new OptGroup like ``group``, for one ``ConfigOpts``.

    ``ConfigOpts.register_group`` keeps a *shallow* copy of the group, so
    the per-option state (overrides, defaults) of every ``ConfigOpts``
    registered with the same module-level OptGroup would be shared: an
    override set on one configuration would show in all of them.
    """
    return cfg.OptGroup(group.name, title=group.title, help=group.help)


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register every core and Glance-connection option on ``conf``.

    Idempotent.  Driver options are registered by the driver itself when it
    is constructed (see :mod:`nova_snapshot_ext.driver`).

    :param conf: the host's configuration object.
    """
    conf.register_group(_fresh(core_group))
    conf.register_opts(core_opts, group=CORE_GROUP)
    conf.register_opts(location_opts, group=CORE_GROUP)
    conf.register_opts(backup_opts, group=CORE_GROUP)
    conf.register_group(_fresh(service_user_group))
    conf.register_opts(service_user_opts, group=SERVICE_USER_GROUP)
    ks_loading.register_auth_conf_options(conf, SERVICE_USER_GROUP)
    conf.register_group(_fresh(glance_group))
    ks_loading.register_session_conf_options(conf, GLANCE_GROUP)
    ks_loading.register_adapter_conf_options(
        conf, GLANCE_GROUP, include_deprecated=False)
    ks_loading.register_auth_conf_options(conf, GLANCE_GROUP)
    for name, value in GLANCE_DEFAULTS.items():
        conf.set_default(name, value, group=GLANCE_GROUP)
    register_cinder_opts(conf)


def register_cinder_opts(conf: cfg.ConfigOpts) -> None:
    """Register ``[snapshot_ext_cinder]`` (keystoneauth1 options)."""
    conf.register_group(_fresh(cinder_group))
    ks_loading.register_session_conf_options(conf, CINDER_GROUP)
    ks_loading.register_adapter_conf_options(
        conf, CINDER_GROUP, include_deprecated=False)
    ks_loading.register_auth_conf_options(conf, CINDER_GROUP)
    conf.set_default('service_type', CINDER_DEFAULTS['service_type'],
                     group=CINDER_GROUP)


def _driver_opts() -> list[tuple[cfg.OptGroup, list[cfg.Opt]]]:
    # Imported here so that importing opts.py scans no entry points.
    from nova_snapshot_ext import driver as driver_mod

    return [(cls.opt_group(), list(cls.CONFIG_OPTS))
            for cls in driver_mod.driver_classes().values()
            if cls.CONFIG_OPTS]


def _with_driver_names(opt_list: list[cfg.Opt]) -> list[cfg.Opt]:
    """``opt_list`` with ``driver``'s help naming the installed drivers."""
    from nova_snapshot_ext import driver as driver_mod

    names = ', '.join('``%s``' % n for n in driver_mod.driver_names())
    shown = []
    for opt in opt_list:
        if opt.dest == 'driver':
            opt = copy.deepcopy(opt)
            opt.help = DRIVER_HELP % {'installed': ': %s' % names}
        shown.append(opt)
    return shown


#: The keystoneauth1 auth plugin whose options the sample config and the
#: options reference show (``auth_type = password``, as the docs use).
SAMPLE_AUTH_PLUGIN = 'password'


def _with_registered_defaults(opt_list: list[cfg.Opt],
                              group: str) -> list[cfg.Opt]:
    """``opt_list`` with the defaults :func:`register_opts` sets.

    Changed options are copies (e.g. ``service_type`` with default
    ``image``), for the sample config and the options reference.
    """
    scratch = cfg.ConfigOpts()
    register_opts(scratch)
    shown = []
    for opt in opt_list:
        try:
            value = scratch[group][opt.dest]
        except (cfg.NoSuchOptError, KeyError, AttributeError):
            value = opt.default
        if value != opt.default:
            opt = copy.deepcopy(opt)
            opt.default = value
        shown.append(opt)
    return shown


def _shown_ks_opts(group: str, session: bool = True) -> list[cfg.Opt]:
    """The keystoneauth1 options of ``group`` as the sample shows them.

    Session and adapter options (with ``session``), the common auth
    options and those of :data:`SAMPLE_AUTH_PLUGIN`, deduplicated, with
    the defaults :func:`register_opts` sets.
    """
    found = (_ks_opts() if session else
             list(ks_loading.get_auth_common_conf_options()))
    names = {opt.dest for opt in found}
    for opt in ks_loading.get_auth_plugin_conf_options(SAMPLE_AUTH_PLUGIN):
        if opt.dest not in names:
            names.add(opt.dest)
            found.append(opt)
    return _with_registered_defaults(found, group)


def list_opts() -> list[tuple[cfg.OptGroup, list[cfg.Opt]]]:
    """Options for ``oslo-config-generator`` (namespace nova_snapshot_ext).

    :returns: ``[(OptGroup, [Opt, ...]), ...]``: the core group (with the
        location options), the Glance connection group (keystoneauth1
        session, adapter and auth options -- those of the ``password``
        plugin -- with the defaults :func:`register_opts` sets, e.g.
        ``service_type = image``), then the service token group and one
        group per installed driver, sorted by group name.
    """
    service_user = (service_user_group, service_user_opts +
                    _shown_ks_opts(SERVICE_USER_GROUP, session=False))
    cinder = (cinder_group, _shown_ks_opts(CINDER_GROUP))
    others = sorted([service_user, cinder] + _driver_opts(),
                    key=lambda item: item[0].name)
    return ([(core_group, _with_driver_names(core_opts) + location_opts +
              backup_opts),
             (glance_group, _shown_ks_opts(GLANCE_GROUP))] + others)


def set_defaults(conf: cfg.ConfigOpts, **overrides: ty.Any) -> None:
    """Change defaults of ``[snapshot_ext]`` options for a consumer.

    :param conf: a configuration object on which :func:`register_opts` ran.
    :param overrides: option name to new default.
    :raises oslo_config.cfg.NoSuchOptError: for an unknown option name.
    """
    for name, value in overrides.items():
        conf.set_default(name, value, group=CORE_GROUP)
