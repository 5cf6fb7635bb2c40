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

"""Base class for tests that run the real Nova against a real Glance.

The tests in ``tests/nova`` import the PyPI ``nova`` package (34) and use
its own test base (``nova.test.TestCase``: Nova's ``CONF`` fixture, policy,
sqlite API and cell databases, RPC fixture).  Glance is a real glance-api
33 (:class:`~nova_snapshot_ext.embedded.glance.EmbeddedGlance` with
``identity='token'``: Nova's image client sends only ``X-Auth-Token``, and
the fake token ``user:project:roles`` carries the identity), by default
with the ``no-raw`` profile, i.e. a Glance whose ``disk_formats`` refuse
``raw``.  Nova reaches it through ``[glance] endpoint_override``.

The whole module skips when ``nova`` (or Glance) is not installed.
"""

import importlib.util
import os
import uuid

import fixtures

from tests import base as tbase
from tests.functional import base as fbase

NOVA_MISSING = importlib.util.find_spec('nova') is None

if NOVA_MISSING:  # pragma: no cover - the tox env 'nova' installs it
    import unittest

    _NovaTestCase = unittest.TestCase
else:
    from nova import test as nova_test

    _NovaTestCase = nova_test.TestCase

MEMBER_ROLES = ['member', 'reader']


def nova_uploads_raw():
    """Nova alone force-activates with ``raw`` (Nova 31 and later).

    Nova 29 and 30 take the first of qcow2, vhd, vmdk, raw that Glance's
    image schema lists and upload zero bytes labelled so.
    """
    from nova_snapshot_ext.nova import hook

    return (hook.nova_major() or 0) >= hook.RAW_FORCE_ACTIVATE_SINCE


ADMIN_ROLES = ['admin', 'member', 'reader']


class NovaGlanceTestCase(_NovaTestCase):
    """Nova (its own fixtures) + a real token-identity Glance.

    Attributes set by :meth:`setUp`: ``glance`` (the EmbeddedGlance),
    ``project_id``, ``user_id``, ``context`` (a Nova RequestContext whose
    ``auth_token`` is the fake token of a project member).
    """

    GLANCE_PROFILE = 'no-raw'
    SNAPSHOT_DRIVER = 'libvirt'
    #: Register the plugin's options on Nova's CONF in setUp (so tests can
    #: set them with ``self.flags``); False for tests that load them from
    #: a nova.conf the way nova-api does.
    REGISTER_PLUGIN_OPTS = True

    def setUp(self):
        if NOVA_MISSING:
            self.skipTest('nova is not installed (tox -e nova)')
        if fbase.SKIP_REASON:
            self.skipTest(fbase.SKIP_REASON)
        super().setUp()
        import nova.conf
        from nova import context as nova_context

        from nova_snapshot_ext.nova import conf as conf_mod
        from nova_snapshot_ext.nova import filter as filter_mod
        from nova_snapshot_ext import opts

        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.exception.FATAL_FORMAT_ERRORS', True))
        self.glance = self.useFixture(fbase.GlanceFixture(
            self.GLANCE_PROFILE, identity='token')).glance
        self.CONF = nova.conf.CONF
        self.flags(endpoint_override=self.glance.endpoint, group='glance')
        self.flags(num_retries=0, group='glance')
        if self.REGISTER_PLUGIN_OPTS:
            # What filter_factory does once the values are valid;
            # registered early so the test can set the options with Nova's
            # own flags() helper.
            opts.register_opts(self.CONF)
            conf_mod.register_opts(self.CONF)
            self.flags(driver=self.SNAPSHOT_DRIVER, group='snapshot_ext')
            self.flags(capabilities_cache_ttl=0, group='snapshot_ext')
        self.addCleanup(filter_mod.unload_plugin)
        #: The plugin's own log records (tests judge these, not every
        #: line the process logged).
        self.plugin_log = self.useFixture(tbase.PluginLogRecords())
        self.project_id = uuid.uuid4().hex
        self.user_id = uuid.uuid4().hex
        self.context = nova_context.RequestContext(
            self.user_id, self.project_id, roles=MEMBER_ROLES,
            auth_token=self.glance.token(self.project_id, self.user_id,
                                         MEMBER_ROLES))

    def admin_glance(self):
        """A glanceclient v2 client of an admin (sees every project)."""
        return self.glance.client(uuid.uuid4().hex, uuid.uuid4().hex,
                                  roles=ADMIN_ROLES)

    def images_named(self, name):
        """Every image (hidden ones included) with this name, any owner."""
        client = self.admin_glance()
        found = {}
        for hidden in (False, True):
            for image in client.images.list(
                    filters={'name': name, 'os_hidden': hidden}):
                found[image['id']] = image
        return list(found.values())


class NovaServerTestCase(NovaGlanceTestCase):
    """Adds Nova's CinderFixture and a volume-backed server in the DB.

    Stubbed: only Cinder (``nova.tests.fixtures.CinderFixture`` patches
    ``nova.volume.cinder.API``; the snapshot metadata the plugin writes
    through ``nova.volume.cinder.cinderclient``, which the fixture does not
    cover, goes to :attr:`snapshot_metadata`; the cloud in a box writes
    it to a real Cinder).  RPC is Nova's ``RPCFixture`` (the server
    is ``stopped``, so no quiesce call is made).  Database: Nova's sqlite
    API and cell databases (``nova.test.TestCase``).
    """

    def setUp(self):
        super().setUp()
        from nova.tests import fixtures as nova_fixtures

        self.cinder = self.useFixture(nova_fixtures.CinderFixture(self))
        #: snapshot id -> the metadata the plugin wrote on it.
        self.snapshot_metadata = {}

        def set_snapshot_metadata(_cinder, snapshot_id, metadata):
            self.snapshot_metadata.setdefault(snapshot_id, {}).update(
                metadata)

        self.useFixture(fixtures.MockPatch(
            'nova_snapshot_ext.cinder.nova_api.NovaCinder.'
            'set_snapshot_metadata',
            set_snapshot_metadata))

    def create_server(self, volume_backed=True, vm_state='stopped',
                      system_metadata=None, extra_bdms=()):
        """An instance (+ mapping, + BDMs) in cell1 of Nova's test DBs.

        :param extra_bdms: more BDM fields dicts, created after the root
            and the swap mappings.

        :returns: the ``nova.objects.Instance``.
        """
        from nova import context as nova_context
        from nova import objects
        from oslo_utils import timeutils

        cell = self.cell_mappings['cell1']
        server_id = str(uuid.uuid4())
        sysmeta = {'image_min_ram': '512', 'image_min_disk': '10',
                   'image_os_distro': 'ubuntu',
                   'image_hw_disk_bus': 'virtio'}
        sysmeta.update(system_metadata or {})
        admin = nova_context.get_admin_context()
        objects.InstanceMapping(
            admin, instance_uuid=server_id, cell_mapping=cell,
            project_id=self.project_id, user_id=self.user_id).create()
        with nova_context.target_cell(admin, cell) as cctxt:
            instance = objects.Instance(
                cctxt, uuid=server_id, project_id=self.project_id,
                user_id=self.user_id, vm_state=vm_state, task_state=None,
                power_state=4, launched_at=timeutils.utcnow(),
                root_device_name='/dev/vda',
                image_ref='' if volume_backed else str(uuid.uuid4()),
                host='compute1',
                system_metadata=sysmeta)
            instance.create()
            self.volume_id = str(uuid.uuid4())
            self.cinder.volumes[self.volume_id] = {
                'id': self.volume_id, 'display_name': 'root',
                'display_description': 'root volume', 'size': 10,
                'multiattach': False, 'availability_zone': 'nova'}
            root = dict(source_type='volume', destination_type='volume',
                        volume_id=self.volume_id, volume_size=10)
            if not volume_backed:
                root = dict(source_type='image', destination_type='local',
                            image_id=instance.image_ref)
            objects.BlockDeviceMapping(
                cctxt, instance_uuid=server_id, boot_index=0,
                device_name='/dev/vda', delete_on_termination=True,
                disk_bus='virtio', device_type='disk', **root).create()
            objects.BlockDeviceMapping(
                cctxt, instance_uuid=server_id, source_type='blank',
                destination_type='local', guest_format='swap',
                boot_index=-1, device_name='/dev/vdb', volume_size=1,
                delete_on_termination=True, disk_bus='virtio',
                device_type='disk').create()
            for fields in extra_bdms:
                objects.BlockDeviceMapping(
                    cctxt, instance_uuid=server_id, **fields).create()
        return instance


def nova_api_paste_ini():
    """Nova's own ``api-paste.ini`` edited as ``doc/source/nova.rst`` says.

    The file Nova installs (``<prefix>/etc/nova/api-paste.ini``, the
    same text as ``/etc/nova/api-paste.ini`` of a packaged Nova) through
    the edit ``nova-snapshot-ext paste`` makes
    (:func:`nova_snapshot_ext.nova.paste_edit.add_filter`).  One change
    the guide does not ask for: ``authtoken`` is dropped (there is no
    Keystone here), so ``keystonecontext`` trusts the ``X-User-Id`` /
    ``X-Project-Id`` / ``X-Roles`` headers the tests send.

    :returns: the ini text.
    """
    import sys

    from nova_snapshot_ext.nova import paste_edit

    path = os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')
    with open(path) as f:
        text = paste_edit.add_filter(f.read()).text
    lines = []
    for line in text.splitlines():
        if line.startswith('keystone = ') and 'keystonecontext' in line:
            line = line.replace(' authtoken', '')
        lines.append(line)
    return '\n'.join(lines) + '\n'
