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

"""Put many images into a Glance fast: rows straight into its database.

For the bench only (:mod:`bench.scale`).  Creating 100,000 images through
the API takes hours; here they are rows written into the database a
Glance on MariaDB uses (cloned from the migrated template by
:class:`nova_snapshot_ext.embedded.glance.EmbeddedGlance`), in batches of
multi-row ``INSERT``\\ s, while that Glance runs: Glance reads every image
from the database on every request, so the next listing shows them.

The rows are what Glance's models define (``glance/db/sqlalchemy/
models.py`` of openstack/glance: ``images``, ``image_properties``,
``image_tags``, each with ``created_at``, ``updated_at``, ``deleted_at``,
``deleted``; properties and tags keyed by ``image_id``); the columns are
checked against the migrated tables before anything is written
(:meth:`Seeder.check_schema`).  No location rows: an ``active`` image
without locations lists and shows like any other (its data cannot be
downloaded, which neither the audit of a size-0 image nor a rotation
asks).

Two kinds of image:

* *unrelated*: ``active`` ``qcow2``/``raw`` images of 1-20 GiB with the
  properties clouds put on their images (``os_distro``, ``hw_disk_bus``
  ...), some tagged, a few hidden (``os_hidden``);
* *plugin*: metadata-only volume-backed snapshots as nova-snapshot-ext
  makes them -- ``active``, ``raw``, 0 bytes with the empty data's
  checksums, ``bdm_v2``, a ``block_device_mapping`` naming one volume
  snapshot, ``root_device_name``, the ``snapshot_ext_fingerprint`` of
  that snapshot and, where the plugin tags its images, the tag naming it
  (:func:`plugin_tags`): images the audit judges and finds nothing wrong
  with.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import typing as ty
import uuid

from nova_snapshot_ext.snapshot import identity

#: Rows per ``INSERT`` statement.
BATCH = 2000

#: The columns written, per table (Glance's models, openstack/glance
#: glance/db/sqlalchemy/models.py: Image, ImageProperty, ImageTag).
COLUMNS = {
    'images': ('id', 'name', 'disk_format', 'container_format', 'size',
               'virtual_size', 'status', 'visibility', 'checksum',
               'os_hash_algo', 'os_hash_value', 'min_disk', 'min_ram',
               'owner', 'protected', 'os_hidden', 'created_at',
               'updated_at', 'deleted_at', 'deleted'),
    'image_properties': ('image_id', 'name', 'value', 'created_at',
                         'updated_at', 'deleted_at', 'deleted'),
    'image_tags': ('image_id', 'value', 'created_at', 'updated_at',
                   'deleted_at', 'deleted'),
}

GiB = 1024 ** 3
EMPTY_MD5 = hashlib.md5(b'', usedforsecurity=False).hexdigest()
EMPTY_SHA512 = hashlib.sha512(b'').hexdigest()

#: Properties of the unrelated images, cycled.
DISTROS = ('ubuntu', 'debian', 'centos', 'rhel', 'fedora', 'windows')


def plugin_tags(snapshot_ids: list[str]) -> list[str]:
    """The tags the plugin gives an image naming these volume snapshots.

    Those of :mod:`nova_snapshot_ext.snapshot.tags` where the plugin tags
    its images (issue 29); none with a plugin that does not.
    """
    try:
        from nova_snapshot_ext.snapshot import tags
    except ImportError:
        return []
    return list(tags.tags_of(snapshot_ids))


class SchemaMismatch(RuntimeError):
    """The migrated tables lack a column the seeder writes."""


class Seeder:
    """Writes image rows into one Glance database on a MariaDB server.

    :param server: a started
        :class:`nova_snapshot_ext.embedded.database.MariaDBServer`.
    :param name: the database (``EmbeddedGlance.database_name``).
    :param clock: the newest ``created_at`` seeded (naive UTC); rows are
        one second apart, older first, all older than ``clock``.
    """

    def __init__(self, server: ty.Any, name: str,
                 clock: datetime.datetime | None = None):
        import pymysql

        self.connection = pymysql.connect(
            unix_socket=server.socket, user='root', database=name,
            charset='utf8', autocommit=False)
        self.clock = clock or (datetime.datetime.utcnow()
                               - datetime.timedelta(days=1))
        self.seeded = 0
        #: Volume snapshot ids the plugin images name, in order.
        self.snapshot_ids: list[str] = []

    def close(self) -> None:
        self.connection.close()

    def check_schema(self) -> None:
        """Every column of :data:`COLUMNS` exists in the migrated tables.

        :raises SchemaMismatch: naming the table and the missing columns.
        """
        with self.connection.cursor() as cursor:
            for table, columns in COLUMNS.items():
                cursor.execute(
                    'SELECT column_name FROM information_schema.columns '
                    'WHERE table_schema = DATABASE() AND table_name = %s',
                    (table,))
                have = {str(row[0]).lower() for row in cursor.fetchall()}
                missing = [c for c in columns if c not in have]
                if missing:
                    raise SchemaMismatch('table %s has no %s (Glance\'s '
                                         'models changed?)' % (
                                             table, ', '.join(missing)))

    def _insert(self, table: str, rows: list[tuple[ty.Any, ...]]) -> None:
        columns = COLUMNS[table]
        sql = 'INSERT INTO %s (%s) VALUES (%s)' % (
            table, ', '.join(columns), ', '.join(['%s'] * len(columns)))
        with self.connection.cursor() as cursor:
            for start in range(0, len(rows), BATCH):
                # PyMySQL folds an INSERT ... VALUES executemany into
                # multi-row statements.
                cursor.executemany(sql, rows[start:start + BATCH])

    def add(self, count: int, owner: str, visibility: str = 'private',
            plugin_every: int = 0, hidden_every: int = 0,
            tag_every: int = 0, prefix: str = 'scale') -> int:
        """Insert ``count`` active images (:func:`rows`) in one transaction.

        :returns: the images seeded so far by this seeder.
        """
        images, props, tags, snaps = rows(
            self.seeded, count, owner, self.clock, visibility=visibility,
            plugin_every=plugin_every, hidden_every=hidden_every,
            tag_every=tag_every, prefix=prefix)
        self.seeded += count
        self.snapshot_ids += snaps
        self._insert('images', images)
        self._insert('image_properties', props)
        self._insert('image_tags', tags)
        self.connection.commit()
        return self.seeded


Rows = list[tuple[ty.Any, ...]]


def rows(first: int, count: int, owner: str, clock: datetime.datetime,
         visibility: str = 'private', plugin_every: int = 0,
         hidden_every: int = 0, tag_every: int = 0, prefix: str = 'scale'
         ) -> tuple[Rows, Rows, Rows, list[str]]:
    """The rows of images ``first`` to ``first + count - 1``.

    :param owner: the project owning them.
    :param clock: the newest ``created_at``; image ``i`` is
        ``10**7 - i`` seconds older.
    :param visibility: ``private``, ``public``, ``shared`` or
        ``community``.
    :param plugin_every: every n-th image is a plugin snapshot (0: none).
    :param hidden_every: every n-th image is ``os_hidden`` (0: none).
    :param tag_every: every n-th unrelated image has two tags.
    :param prefix: name prefix.
    :returns: ``(images, image_properties, image_tags, snapshot ids)``,
        rows in the order of :data:`COLUMNS`.
    """
    images: Rows = []
    props: Rows = []
    tags: Rows = []
    snaps: list[str] = []
    for i in range(first, first + count):
        image_id = str(uuid.uuid4())
        when = clock - datetime.timedelta(seconds=10 ** 7 - i)
        stamp = (when, when, None, 0)
        hidden = 1 if hidden_every and i % hidden_every == 0 else 0
        if plugin_every and i % plugin_every == 0:
            snap = str(uuid.uuid4())
            snaps.append(snap)
            mapping = [{'source_type': 'snapshot',
                        'destination_type': 'volume', 'boot_index': 0,
                        'device_name': '/dev/vda', 'snapshot_id': snap,
                        'volume_size': 10, 'delete_on_termination': False,
                        'disk_bus': 'virtio', 'device_type': 'disk'}]
            images.append((image_id, '%s-snap-%d' % (prefix, i), 'raw',
                           'bare', 0, 0, 'active', visibility, EMPTY_MD5,
                           'sha512', EMPTY_SHA512, 0, 0, owner, 0,
                           hidden) + stamp)
            tags += [(image_id, tag) + stamp for tag in plugin_tags([snap])]
            for key, value in (
                    ('bdm_v2', 'True'),
                    ('block_device_mapping', json.dumps(mapping)),
                    ('root_device_name', '/dev/vda'),
                    (identity.FINGERPRINT_PROPERTY,
                     identity.fingerprint_of([snap]))):
                props.append((image_id, key, value) + stamp)
            continue
        size = (1 + i % 20) * GiB
        images.append((image_id, '%s-%d' % (prefix, i),
                       'qcow2' if i % 3 else 'raw', 'bare', size, size * 2,
                       'active', visibility,
                       hashlib.md5(image_id.encode(),
                                   usedforsecurity=False).hexdigest(),
                       'sha512', hashlib.sha512(image_id.encode()).hexdigest(),
                       10, 512, owner, 0, hidden) + stamp)
        for key, value in (('os_distro', DISTROS[i % len(DISTROS)]),
                           ('os_version', str(10 + i % 15)),
                           ('hw_disk_bus', 'virtio'),
                           ('hw_qemu_guest_agent', 'yes')):
            props.append((image_id, key, value) + stamp)
        if tag_every and i % tag_every == 0:
            tags += [(image_id, 'golden') + stamp,
                     (image_id, 'build-%d' % (i % 97)) + stamp]
    return images, props, tags, snaps
