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

"""The services of the cloud in a box, one module each, in start order.

Each module holds one :class:`~.base.CloudService` (its ports, databases,
Keystone user, catalog entries; configure, initialise, start, stop).
:class:`~nova_snapshot_ext.embedded.cloud.launcher.Cloud` runs them in
the order of :data:`SERVICES`: adding a service is one module and one
line here (the migrated template is rebuilt once, as the list is part of
its record).
"""

from nova_snapshot_ext.embedded.cloud.services import cinder
from nova_snapshot_ext.embedded.cloud.services import cinder_backup
from nova_snapshot_ext.embedded.cloud.services import glance
from nova_snapshot_ext.embedded.cloud.services import keystone
from nova_snapshot_ext.embedded.cloud.services import mariadb
from nova_snapshot_ext.embedded.cloud.services import network
from nova_snapshot_ext.embedded.cloud.services import nova
from nova_snapshot_ext.embedded.cloud.services import objects
from nova_snapshot_ext.embedded.cloud.services import placement
from nova_snapshot_ext.embedded.cloud.services import rabbitmq
from nova_snapshot_ext.embedded.cloud.services import storage

#: Start order; stopped newest first.
SERVICES = (
    mariadb.MariaDB,
    rabbitmq.RabbitMQ,
    storage.Storage,
    network.Network,
    objects.LocationObjects,
    keystone.Keystone,
    placement.Placement,
    glance.Glance,
    cinder.Cinder,
    cinder_backup.CinderBackup,
    nova.Nova,
)
#: Debian packages needed besides every service's own ``programs``
#: (the cloud's images are made with ``qemu-img``).
PROGRAMS = {'qemu-img': 'qemu-utils'}


def program_maps(stack):
    """``{program: Debian package}`` maps of the services of ``stack``.

    :param stack: ``'fake'`` or ``'real'``.
    :returns: a list of mappings (:mod:`..host`'s input).
    """
    return [PROGRAMS] + [cls.programs for cls in SERVICES
                         if stack in cls.stacks and cls.programs]
