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

"""The options of this Tempest plugin (tempest.conf).

Nothing here imports Tempest: the options are plain oslo.config objects
that the plugin class
(:class:`nova_snapshot_ext_tempest_plugin.plugin.NovaSnapshotExtTempestPlugin`)
registers on Tempest's configuration.
"""

from oslo_config import cfg

service_option = cfg.BoolOpt(
    'nova_snapshot_ext', default=True,
    help='Whether nova-snapshot-ext is in nova-api\'s paste pipeline. '
    'When False every test of this plugin is skipped. (Leave it True to '
    'see what the tests find on a Nova without the plugin: they fail '
    'where that Nova leaks volume snapshots or makes a dishonest image.)')

group = cfg.OptGroup(
    name='nova_snapshot_ext',
    title='nova-snapshot-ext (volume-backed snapshot images) test options')

opts = [
    cfg.ListOpt('expected_disk_formats', default=[],
                help='The disk_format values a volume-backed snapshot image '
                'may carry on this cloud, e.g. "raw" on a Glance that '
                'allows raw, "qcow2" on one that refuses it. Empty: any '
                'format that this Glance\'s image schema allows, as long '
                'as the payload is honest (zero bytes only as raw).'),
    cfg.IntOpt('max_payload_size', default=65536,
               help='The largest image size (bytes) a metadata-only '
               'snapshot image may have: an honest empty payload is a few '
               'KiB at most (1536 B for qcow2); the volumes\' data is '
               'never uploaded.'),
    cfg.BoolOpt('backup', default=True,
                help='Whether the plugin serves createBackup for '
                'volume-backed servers (Nova alone refuses it).'),
    cfg.BoolOpt('backup_copies', default=False,
                help='Whether nova-api copies each volume-backed backup off '
                'the primary storage (the plugin\'s [snapshot_ext] '
                'backup_copies). True, with [volume-feature-enabled] backup '
                '(cinder-backup runs): the copy test runs, and expects one '
                'available Cinder backup per volume snapshot of each '
                'createBackup, recorded with its image, server and disk. '
                'False: that test is skipped.'),
    cfg.StrOpt('location_url',
               help='The plugin\'s [snapshot_ext] location_url when nova-api '
               'activates through a location (activation_method '
               'location-first or location-fallback). Set: the location test '
               'runs and expects a snapshot image activated through exactly '
               'this location (Glance\'s direct_url, where Glance shows it, '
               'and its size). Unset: that test is skipped.'),
    cfg.StrOpt('marker_image_ref',
               help='The id of the marker guest image in this cloud\'s '
               'Glance (python -m nova_snapshot_ext.embedded.cloud.guest '
               'builds it from Debian packages and prints its path; upload '
               'it as raw, or qcow2 where raw is refused, with min_disk 1). '
               'Set, with [compute-feature-enabled] console_output: the '
               'data round trip runs (a guest writes a marker on each '
               'volume, a server booted from the snapshot image must read '
               'them back on the same disks). Unset: that test is skipped. '
               'The guest needs a hypervisor that boots x86 disks with '
               'virtio (libvirt/QEMU or KVM).'),
    cfg.IntOpt('backup_spacing', default=1,
               help='Seconds between two createBackup calls of the '
               'rotation test, so that each backup\'s created_at (one-'
               'second resolution in Glance) orders them as a real '
               'schedule would.'),
]


def list_opts():
    """The options of this plugin, by group (for sample generation).

    :returns: a list of (group name, options) tuples.
    """
    return [
        ('service_available', [service_option]),
        (group.name, opts),
    ]
