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

"""The snapshot paths the benchmark compares.

A path registers one metadata-only, volume-backed snapshot image in Glance
and leaves it ``active``.  Each path runs in its own worker process
(:mod:`bench.worker`), so this module imports nothing heavy at module
level: a path imports what it needs in :meth:`BenchPath.setup`, and the
worker's memory is that path's alone.

:data:`PATHS` maps a path name to a factory taking the worker spec.  To
compare another way of snapshotting (for example the plugin in location
mode), add an entry -- e.g. ``functools.partial(PluginPath,
options={'activation_method': 'location-first', 'location_url': ...})`` --
and, if that path needs other Glance settings, run the benchmark with
``--profile`` naming a profile of
:data:`nova_snapshot_ext.embedded.glance.PROFILES` that has them (e.g.
``http-store``).

The worker spec (a dict, JSON from the orchestrator) has:

``path``        the path name
``endpoint``    Glance's URL, e.g. ``http://127.0.0.1:PORT``
``token``       a fake token ``user:project:roles`` (embedded Glance in
                ``identity='token'`` mode)
``project_id``, ``user_id``, ``roles``  the identity the token carries
``template``    the image record every path registers: ``name``,
                ``visibility``, ``min_ram`` (MiB), ``min_disk`` (GiB) and
                ``properties`` (all strings, ``block_device_mapping`` a JSON
                string), built by the plugin's metadata builder from the
                shipped sample request
``request``     the shipped sample request (a dict)
``prefix``      image name prefix of this worker, e.g. ``bench-nova-c16-``
``location_url`` the loopback URL of the valid empty qcow2 the
                ``plugin-location`` path activates images from
``glance_db``   the embedded Glance's SQLite database file (the
                ``location-floor`` path watches the image's row in it)
"""

from __future__ import annotations

import copy
import functools
import json
import typing as ty
import uuid


def token_session(endpoint: str, token: str) -> ty.Any:
    """A keystoneauth1 session sending ``token`` to ``endpoint``.

    One per process, reused for every snapshot (it pools connections).

    :param endpoint: Glance's URL.
    :param token: the fake ``X-Auth-Token``.
    :returns: a :class:`keystoneauth1.session.Session`.
    """
    from keystoneauth1 import session as ks_session
    from keystoneauth1 import token_endpoint
    import requests

    http = requests.Session()
    http.trust_env = False  # never send loopback traffic to a proxy
    return ks_session.Session(auth=token_endpoint.Token(endpoint, token),
                              session=http)


class BenchPath:
    """One way of registering a volume-backed snapshot image.

    :param spec: the worker spec (see the module docstring).
    """

    #: Short description for the report.
    description = ''

    def __init__(self, spec: ty.Mapping[str, ty.Any]):
        self.spec = spec

    def setup(self) -> None:
        """Import and build the long-lived objects (not timed)."""

    def prepare(self, seq: int) -> ty.Any:
        """Build the input of snapshot number ``seq`` (not timed).

        :param seq: 0-based sequence number within this worker.
        :returns: whatever :meth:`snapshot` takes.
        """
        raise NotImplementedError

    def snapshot(self, prepared: ty.Any) -> None:
        """Register one snapshot image and leave it active (timed).

        :param prepared: from :meth:`prepare`.
        :raises Exception: any failure; the worker counts it as an error.
        """
        raise NotImplementedError

    def name(self, seq: int) -> str:
        """The fresh image name of snapshot ``seq``."""
        return '%s%d' % (self.spec['prefix'], seq)


class PluginPath(BenchPath):
    """``SnapshotService.snapshot`` of the shipped sample request.

    One :class:`~nova_snapshot_ext.snapshot.service.SnapshotService` and
    one :class:`~nova_snapshot_ext.image.glance.GlanceClient` (one
    keystoneauth1 session) serve every snapshot, as on a real host; the
    Glance capabilities are discovered by the first snapshot and cached for
    ``[snapshot_ext] capabilities_cache_ttl`` seconds.

    :param spec: the worker spec.
    :param options: ``[snapshot_ext]`` overrides, e.g.
        ``{'activation_method': 'upload'}``.
    :param driver: the hypervisor driver name.
    """

    description = ('nova-snapshot-ext SnapshotService.snapshot (preflight, '
                   'create, upload, read-back verify)')

    def __init__(self, spec: ty.Mapping[str, ty.Any],
                 options: ty.Mapping[str, ty.Any] | None = None,
                 driver: str = 'libvirt'):
        super().__init__(spec)
        self.options = dict(options or {})
        self.driver_name = driver

    def setup(self) -> None:
        from oslo_config import cfg

        from nova_snapshot_ext import driver as driver_mod
        from nova_snapshot_ext.image import glance as glance_mod
        from nova_snapshot_ext import opts
        from nova_snapshot_ext.snapshot import request as request_mod
        from nova_snapshot_ext.snapshot import service as service_mod

        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([], default_config_files=[], default_config_dirs=[])
        for key, value in self.options.items():
            conf.set_override(key, value, group=opts.CORE_GROUP)
        if self.options.get('activation_method', 'upload') != 'upload':
            conf.set_override('location_url', self.spec['location_url'],
                              group=opts.CORE_GROUP)
        session = token_session(self.spec['endpoint'], self.spec['token'])
        client = glance_mod.GlanceClient(
            session, endpoint_override=self.spec['endpoint'])
        self.service = service_mod.SnapshotService(
            conf, driver=driver_mod.load_driver(conf, self.driver_name),
            glance=client)
        self._from_dict = request_mod.SnapshotRequest.from_dict

    def prepare(self, seq: int) -> ty.Any:
        data = copy.deepcopy(self.spec['request'])
        data['name'] = self.name(seq)
        # Each snapshot its own volume snapshots: the plugin derives the
        # image id from them, so a request repeated with the same ones is
        # a retry of one snapshot (it finds the same image).
        for bdm in data['block_device_mappings']:
            if bdm.get('snapshot_id'):
                bdm['snapshot_id'] = str(uuid.uuid4())
        return self._from_dict(data)

    def snapshot(self, prepared: ty.Any) -> None:
        result = self.service.snapshot(prepared)
        if result.status != 'active':
            raise RuntimeError('snapshot %s ended %s' % (result.image_id,
                                                         result.status))


class NovaPath(BenchPath):
    """Nova's own path: ``nova.image.glance.API().create``, no plugin.

    What ``compute.api.API.snapshot_volume_backed`` does last: the image
    metadata with ``size: 0``, no data, the properties holding
    ``block_device_mapping`` (a list), ``bdm_v2 = True`` and
    ``root_device_name``.  Nova's force-activate step then creates the
    image as ``raw``/``bare`` and uploads zero bytes.  ``[glance]
    endpoint_override`` points at the embedded Glance; a
    ``nova.context.RequestContext`` per snapshot carries the token, as a
    nova-api request would.
    """

    description = ("Nova 34 nova.image.glance.API().create(context, meta) "
                   "with size 0 (force-activate: create, upload 0 B, get)")

    def setup(self) -> None:
        import nova.conf
        from nova import context as nova_context
        from nova.image import glance as nova_glance

        conf = nova.conf.CONF
        conf([], project='nova', default_config_files=[],
             default_config_dirs=[])
        conf.set_override('endpoint_override', self.spec['endpoint'],
                          group='glance')
        # nova-api builds this once (compute.api.API.image_api).
        self.api = nova_glance.API()
        self._context = functools.partial(
            nova_context.RequestContext, user_id=self.spec['user_id'],
            project_id=self.spec['project_id'],
            auth_token=self.spec['token'], roles=list(self.spec['roles']))
        template = self.spec['template']
        properties = dict(template['properties'])
        properties['block_device_mapping'] = json.loads(
            properties['block_device_mapping'])
        properties['bdm_v2'] = True
        self.meta = {'visibility': template['visibility'],
                     'min_ram': template['min_ram'],
                     'min_disk': template['min_disk'],
                     'size': 0,
                     'properties': properties}

    def prepare(self, seq: int) -> ty.Any:
        meta = copy.deepcopy(self.meta)
        meta['name'] = self.name(seq)
        return self._context(), meta

    def snapshot(self, prepared: ty.Any) -> None:
        context, meta = prepared
        image = self.api.create(context, meta)
        if image.get('status') != 'active':
            raise RuntimeError('image %s is %s' % (image.get('id'),
                                                   image.get('status')))


class FloorPath(BenchPath):
    """The two HTTP calls alone, over one keystoneauth1 adapter.

    ``POST /v2/images`` with the same attributes and properties (``raw``,
    ``bare``), then ``PUT /v2/images/{id}/file`` with an empty body.  No
    glanceclient, no schema, no read-back: the least any client can do.
    """

    description = ('keystoneauth1 Adapter: POST /v2/images + PUT '
                   '/v2/images/{id}/file (0 B), nothing else')

    def setup(self) -> None:
        from keystoneauth1 import adapter as ks_adapter

        session = token_session(self.spec['endpoint'], self.spec['token'])
        self.adapter = ks_adapter.Adapter(
            session, endpoint_override=self.spec['endpoint'])
        template = self.spec['template']
        self.body = dict(template['properties'])
        self.body.update(visibility=template['visibility'],
                         min_ram=template['min_ram'],
                         min_disk=template['min_disk'],
                         disk_format='raw', container_format='bare')

    def prepare(self, seq: int) -> ty.Any:
        body = dict(self.body)
        body['name'] = self.name(seq)
        return body

    def snapshot(self, prepared: ty.Any) -> None:
        resp = self.adapter.post('/v2/images', json=prepared)
        if resp.status_code != 201:
            raise RuntimeError('create answered %d' % resp.status_code)
        image_id = resp.json()['id']
        resp = self.adapter.put(
            '/v2/images/%s/file' % image_id, data=b'',
            headers={'Content-Type': 'application/octet-stream'})
        if resp.status_code != 204:
            raise RuntimeError('upload answered %d' % resp.status_code)


class LocationFloorPath(BenchPath):
    """Location mode's floor: create, add the location, one read.

    ``POST /v2/images`` (``qcow2``, ``bare``), ``POST
    /v2/images/{id}/locations`` with the loopback qcow2 and the same
    sha512 validation data the plugin sends, then the image is read once
    (``GET /v2/images/{id}``) at the moment Glance's own database shows it
    ``active``.  One watcher thread per worker looks at the rows of every
    image its snapshots wait for, in one read-only SQLite query every
    millisecond (no HTTP), and wakes each snapshot when its row leaves
    ``queued``/``importing``.  No client can know sooner that the import
    finished, nor read fewer times: 3 requests, and the wall time is
    Glance's own import plus one read.  A query holds SQLite's shared lock
    for microseconds; Glance's writes wait for it (``timeout=30``), as
    they would for any other reader.
    """

    description = ('keystoneauth1 Adapter: POST /v2/images + POST '
                   '/v2/images/{id}/locations, one GET when Glance\'s '
                   'database shows active')

    #: Seconds between two looks at the rows.
    watch_interval = 0.001
    #: Seconds a snapshot waits for Glance before it counts as an error.
    timeout = 120.0

    def setup(self) -> None:
        import hashlib
        import threading
        import urllib.request

        from keystoneauth1 import adapter as ks_adapter

        session = token_session(self.spec['endpoint'], self.spec['token'])
        self.adapter = ks_adapter.Adapter(
            session, endpoint_override=self.spec['endpoint'])
        template = self.spec['template']
        self.body = dict(template['properties'])
        self.body.update(visibility=template['visibility'],
                         min_ram=template['min_ram'],
                         min_disk=template['min_disk'],
                         disk_format='qcow2', container_format='bare')
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(self.spec['location_url'], timeout=10) as resp:
            data = resp.read()
        self.location = {
            'url': self.spec['location_url'],
            'validation_data': {'os_hash_algo': 'sha512',
                                'os_hash_value':
                                    hashlib.sha512(data).hexdigest()}}
        self._cond = threading.Condition()
        # image id -> [event, final status or None]
        self._waiting: dict[str, list[ty.Any]] = {}
        threading.Thread(target=self._watch, name='glance-db-watch',
                         daemon=True).start()

    def _watch(self) -> None:
        import sqlite3
        import time

        db = sqlite3.connect('file:%s?mode=ro' % self.spec['glance_db'],
                             uri=True, timeout=30)
        while True:
            with self._cond:
                while not self._waiting:
                    self._cond.wait()
                ids = list(self._waiting)
            rows = db.execute(
                'SELECT id, status FROM images WHERE id IN (%s)'
                % ','.join('?' * len(ids)), ids).fetchall()
            with self._cond:
                for image_id, status in rows:
                    if status in ('queued', 'importing'):
                        continue
                    entry = self._waiting.pop(image_id, None)
                    if entry is not None:
                        entry[1] = status
                        entry[0].set()
            time.sleep(self.watch_interval)

    def prepare(self, seq: int) -> ty.Any:
        body = dict(self.body)
        body['name'] = self.name(seq)
        return body

    def snapshot(self, prepared: ty.Any) -> None:
        import threading

        resp = self.adapter.post('/v2/images', json=prepared)
        if resp.status_code != 201:
            raise RuntimeError('create answered %d' % resp.status_code)
        image_id = resp.json()['id']
        entry: list[ty.Any] = [threading.Event(), None]
        with self._cond:
            self._waiting[image_id] = entry
            self._cond.notify()
        resp = self.adapter.post('/v2/images/%s/locations' % image_id,
                                 json=self.location)
        if resp.status_code != 202:
            with self._cond:
                self._waiting.pop(image_id, None)
            raise RuntimeError('add location answered %d'
                               % resp.status_code)
        if not entry[0].wait(self.timeout):
            with self._cond:
                self._waiting.pop(image_id, None)
            raise RuntimeError('image %s not active after %d s'
                               % (image_id, self.timeout))
        if entry[1] != 'active':
            raise RuntimeError('image %s went %s' % (image_id, entry[1]))
        resp = self.adapter.get('/v2/images/%s' % image_id)
        if resp.status_code != 200 or resp.json().get('status') != 'active':
            raise RuntimeError('read answered %d' % resp.status_code)


#: Path name -> factory(spec).  The order is the report's column order.
PATHS: dict[str, ty.Callable[[ty.Mapping[str, ty.Any]], BenchPath]] = {
    'plugin': functools.partial(PluginPath,
                                options={'activation_method': 'upload'}),
    # Location mode: Glance's service location API reads (and hashes) a
    # valid empty qcow2 served on loopback; its wall time is the time to
    # active, the image read when locations.ImportWait says.
    'plugin-location': functools.partial(
        PluginPath, options={'activation_method': 'location-first',
                             'location_disk_format': 'qcow2'}),
    # The same without validation data (location_hash_algo = none):
    # Glance activates the image before it hashes the object.
    'plugin-location-nohash': functools.partial(
        PluginPath, options={'activation_method': 'location-first',
                             'location_disk_format': 'qcow2',
                             'location_hash_algo': 'none'}),
    'nova': NovaPath,
    'floor': FloorPath,
    'location-floor': LocationFloorPath,
}

#: The path the ratios are computed for, and the two it is compared with.
REFERENCE = 'plugin'
BASELINES = ('nova', 'floor')


def describe(name: str) -> str:
    """The description of path ``name`` (for the report)."""
    factory = PATHS[name]
    cls = getattr(factory, 'func', factory)
    return str(getattr(cls, 'description', ''))
