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

"""What every start of the cloud makes once its services run.

Flavors (:data:`FLAVORS`), the demo project's unlimited Nova and Cinder
quotas, two small public ``qcow2`` images and, on the real stack, the
marker guest's image (:mod:`.guest`).
"""

import os
import subprocess

from nova_snapshot_ext.embedded import process as proc_mod

#: Flavors made on every start (name, ram MiB, vcpus, disk GiB).
FLAVORS = (('cloud.tiny', 256, 1, 1), ('cloud.small', 512, 1, 2))


def make(cloud):
    """Flavors, the demo project's quotas and the images.

    :param cloud: a started :class:`~.launcher.Cloud`.
    :returns: ``{'flavors': {name: id}, 'images': {'image'|'image_alt'|
        'guest': id}}`` (``guest`` on the real stack only).
    :raises CloudError: when Nova refuses a flavor.
    """
    admin = cloud.session('admin')
    nova = cloud.url('nova')
    flavors = {name: _flavor(admin, nova, name, ram, vcpus, disk)
               for name, ram, vcpus, disk in FLAVORS}
    demo = cloud.ids['projects']['demo']
    admin.put(nova + '/os-quota-sets/%s' % demo, json={
        'quota_set': {'instances': -1, 'cores': -1, 'ram': -1}})
    admin.put(cloud.url('cinder') + '/%s/os-quota-sets/%s' % (
        cloud.ids['projects']['admin'], demo), json={
        'quota_set': {'volumes': -1, 'snapshots': -1, 'gigabytes': -1,
                      'backups': -1, 'backup_gigabytes': -1}})
    images = {'image': _empty_qcow2(cloud, admin, 'cloud-image'),
              'image_alt': _empty_qcow2(cloud, admin, 'cloud-image-alt')}
    if cloud.real is not None:
        images['guest'] = _guest(cloud, admin)
    return {'flavors': flavors, 'images': images}


def _flavor(admin, nova, name, ram, vcpus, disk):
    """The flavor's id, made unless a warm start's database has it."""
    resp = admin.post(nova + '/flavors', json={'flavor': {
        'name': name, 'ram': ram, 'vcpus': vcpus, 'disk': disk}},
        raise_exc=False)
    if resp.status_code == 200:
        return resp.json()['flavor']['id']
    if resp.status_code == 409:
        found = admin.get(nova + '/flavors').json()['flavors']
        return [f['id'] for f in found if f['name'] == name][0]
    raise proc_mod.CloudError('flavor %s: HTTP %s %s' % (
        name, resp.status_code, resp.text[:300]))


def _empty_qcow2(cloud, session, name):
    """A small public ``qcow2`` image (made with ``qemu-img``)."""
    path = os.path.join(cloud.base_dir, name + '.qcow2')
    subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', path,
                    '64M'], check=True, timeout=60)
    return upload(cloud, session, name, path, 'qcow2')


def _guest(cloud, session):
    """The marker guest: ``raw``, or ``qcow2`` where Glance refuses raw.

    With ``hw_qemu_guest_agent=yes``: Nova gives its servers the agent's
    channel and quiesces them before volume snapshots.
    """
    path = cloud.real.guest_disk
    agent = {'hw_qemu_guest_agent': 'yes'}
    if 'raw' in cloud.glance.disk_formats:
        return upload(cloud, session, 'cloud-guest', path, 'raw', agent)
    qcow2 = os.path.join(cloud.base_dir, 'cloud-guest.qcow2')
    cloud.procs.run('guest-qcow2', ['qemu-img', 'convert', '-q', '-f',
                                    'raw', '-O', 'qcow2', path, qcow2])
    return upload(cloud, session, 'cloud-guest', qcow2, 'qcow2', agent)


def upload(cloud, session, name, path, disk_format, properties=None):
    """A public image of the file at ``path`` (``min_disk`` 1).

    :returns: the image's id.
    """
    glance = cloud.url('glance')
    image = session.post(glance + '/v2/images', json=dict(
        properties or {}, name=name, disk_format=disk_format,
        container_format='bare', visibility='public',
        min_disk=1)).json()
    with open(path, 'rb') as fh:
        session.put(glance + '/v2/images/%s/file' % image['id'],
                    data=fh.read(), headers={
                        'Content-Type': 'application/octet-stream'})
    return image['id']
