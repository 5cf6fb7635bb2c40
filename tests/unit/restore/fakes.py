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

"""Copies, a fake Cinder and Nova, and a clock for the restore tests."""

from keystoneauth1 import plugin as ks_plugin

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.cinder import client as cinder_client
from nova_snapshot_ext import exception
from tests import base

PROJECT = 'project-a'
SERVER = 'aaaaaaaa-1111-4222-8333-444444444444'
IMAGE = '11111111-2222-4333-8444-555555555555'


def copy(backup_id, snapshot_id, device_name, boot_index, image_id=IMAGE,
         server=SERVER, backup_type='daily', set_size=1, project=PROJECT,
         status='available', created_at='2024-05-01T10:00:00', size=1,
         **extra):
    """A Cinder backup document carrying a valid copy record."""
    meta = copies.record_of(
        copies.Disk(snapshot_id, device_name, boot_index), image_id,
        server, backup_type, set_size, project)
    backup = {'id': backup_id, 'snapshot_id': snapshot_id,
              'volume_id': 'vol-of-%s' % snapshot_id, 'metadata': meta,
              'status': status, 'created_at': created_at, 'size': size,
              'fail_reason': None, 'is_incremental': False}
    backup.update(extra)
    return backup


def two_disk_set(image_id=IMAGE, created_at='2024-05-01T10:00:00',
                 **changes):
    """The two copies of one backup image: boot disk and data disk."""
    return [copy('b-root-' + image_id[:4], 'snap-root-' + image_id[:4],
                 '/dev/vda', 0, image_id=image_id, set_size=2, size=10,
                 created_at=created_at, **changes),
            copy('b-data-' + image_id[:4], 'snap-data-' + image_id[:4],
                 '/dev/vdb', -1, image_id=image_id, set_size=2, size=5,
                 created_at=created_at, **changes)]


class FakeAuth(ks_plugin.BaseAuthPlugin):
    """An identity whose catalog has every service at one endpoint.

    :ivar asked: the endpoint filters keystoneauth asked it with.
    """

    def __init__(self, endpoint, project_id='p1', error=None):
        super().__init__()
        self.endpoint = endpoint
        self.project_id = project_id
        self.error = error
        self.asked = []

    def get_token(self, session, **kwargs):
        return 'a-token'

    def get_endpoint(self, session, **kwargs):
        if self.error is not None:
            raise self.error
        self.asked.append(kwargs)
        return self.endpoint

    def get_project_id(self, session):
        if self.error is not None:
            raise self.error
        return self.project_id


Clock = base.Clock


def quota(volumes=(10, 0, 0), gigabytes=(1000, 0, 0)):
    """Cinder's volume quota as :meth:`CinderClient.volume_quota` says."""
    return {key: dict(zip(('limit', 'in_use', 'reserved'), value))
            for key, value in (('volumes', volumes),
                               ('gigabytes', gigabytes))}


class FakeCinder:
    """The calls a restore makes of Cinder, scripted.

    :ivar statuses: volume id -> the statuses its next reads answer, one
        each (the last repeats; ``None`` is a volume gone).
    :ivar restore_errors: backup id -> the error its restore raises.
    :ivar delete_errors: volume id -> the error its delete raises.
    :ivar named: volume name -> the volumes its listing answers
        (``named_error``: the error it raises instead).
    :ivar gone: volume ids whose delete answers that they were gone
        already (Cinder's 404).
    """

    def __init__(self, quota_set=None):
        self.quota_set = quota_set or quota()
        self.statuses = {}
        self.default_statuses = ['restoring-backup', 'available']
        self.restore_errors = {}
        self.delete_errors = {}
        self.gone = set()
        self.restored = []
        self.deleted = []
        self.quota_asked = []
        self.named = {}
        self.listed = []
        self.named_error = None

    def volume_quota(self, project_id):
        self.quota_asked.append(project_id)
        return self.quota_set

    def restore_backup(self, backup_id, name):
        if backup_id in self.restore_errors:
            raise self.restore_errors[backup_id]
        volume_id = 'vol-%d' % (len(self.restored) + 1)
        self.restored.append((backup_id, name, volume_id))
        self.statuses.setdefault(volume_id, list(self.default_statuses))
        return volume_id

    def volumes_named(self, name):
        self.listed.append(name)
        if self.named_error is not None:
            raise self.named_error
        return list(self.named.get(name, ()))

    def get_volume(self, volume_id):
        if volume_id in self.deleted:
            return None
        script = self.statuses[volume_id]
        status = script.pop(0) if len(script) > 1 else script[0]
        return None if status is None else {'id': volume_id,
                                            'status': status}

    def delete_volume(self, volume_id):
        if volume_id in self.delete_errors:
            raise self.delete_errors[volume_id]
        if volume_id in self.gone:
            return cinder_client.GONE
        self.deleted.append(volume_id)
        return cinder_client.DELETED


class FakeCompute:
    """The calls a restore makes of Nova, scripted.

    :ivar statuses: the statuses the new server's reads answer, one each
        (the last repeats).
    :ivar fault: the ``fault`` of an ``ERROR`` server.
    :ivar named: server name -> the servers its listing answers, or a
        callable answering them at each listing (``named_error``: the
        error it raises instead).
    :ivar cinder: when set, the server's volumes are ``in-use`` in it
        from the create until the server is deleted.
    """

    def __init__(self, flavors=None, cinder=None):
        self.flavors = {'m1.small': 'f-2'} if flavors is None else flavors
        self.statuses = ['BUILD', 'ACTIVE']
        self.fault = None
        self.cinder = cinder
        self.create_error = None
        self.delete_error = None
        self.created = []
        self.deleted = []
        self.named = {}
        self.named_error = None

    def flavor_id(self, name_or_id):
        if name_or_id in self.flavors.values():
            return name_or_id
        if name_or_id in self.flavors:
            return self.flavors[name_or_id]
        raise exception.RestoreRefused(reason='no flavor %r' % name_or_id)

    def create_server(self, name, flavor_id, disks, networks):
        if self.create_error is not None:
            raise self.create_error
        self.created.append({'name': name, 'flavor_id': flavor_id,
                             'disks': [dict(d) for d in disks],
                             'networks': networks})
        if self.cinder is not None:
            for disk in disks:
                self.cinder.statuses[disk['volume_id']] = ['in-use']
        return 'srv-new'

    def servers_named(self, name):
        if self.named_error is not None:
            raise self.named_error
        listing = self.named.get(name, ())
        return list(listing() if callable(listing) else listing)

    def get_server(self, server_id):
        if server_id in self.deleted:
            return None
        script = self.statuses
        status = script.pop(0) if len(script) > 1 else script[0]
        server = {'id': server_id, 'status': status}
        if status == 'ERROR' and self.fault:
            server['fault'] = {'message': self.fault}
        return server

    def delete_server(self, server_id):
        if self.delete_error is not None:
            raise self.delete_error
        self.deleted.append(server_id)
        if self.cinder is not None and self.created:
            for disk in self.created[-1]['disks']:
                self.cinder.statuses[disk['volume_id']] = ['available']
