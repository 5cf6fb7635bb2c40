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

"""An in-memory stand-in for ``glanceclient.Client('2')`` (unit tests).

It behaves like Glance 33 where the plugin depends on it, as verified
against the real service (see tests/functional): client-side schema
refusal (``TypeError``), 409 for a used id, 415 (bare ``HTTPException``)
for an empty non-raw ``bare`` upload leaving the image queued and
poisoned, 403 for members of non-shared images.  Failures can be
injected per operation with :meth:`FakeGlance.fail`.

Locations (Glance 33, see tests/functional/test_locations.py): the new
API (``add_image_location``) raises ``HTTPNotImplemented`` client-side
without v2.17 (a ``POST .../locations`` through ``http_client``: 404),
409 unless queued, answers with the image still queued and
runs its ``location_import`` task on the next ``get`` (``objects`` maps a
URL to its bytes; a missing or empty object or a wrong hash fails the
task, leaving the image queued); the legacy API (``add_location``) is 403
unless ``show_multiple_locations``, 400 for an invalid location, and
activates synchronously without hashing.
"""

import hashlib
import uuid

import fixtures
from glanceclient import exc

DEFAULT_DISK_FORMATS = ['ami', 'ari', 'aki', 'vhd', 'vhdx', 'vmdk', 'raw',
                        'qcow2', 'vdi', 'iso', 'ploop']
DEFAULT_CONTAINER_FORMATS = ['ami', 'ari', 'aki', 'bare', 'ovf', 'ova',
                             'docker', 'compressed']
BASE = ['id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
        'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
        'virtual_size', 'container_format', 'disk_format', 'created_at',
        'updated_at', 'tags', 'direct_url', 'min_ram', 'min_disk', 'self',
        'file', 'stores', 'schema', 'locations']


class _Schema:
    def __init__(self, doc):
        self._doc = doc

    def raw(self):
        return self._doc


class FakeGlance:
    """State shared by the fake client's controllers."""

    def __init__(self, disk_formats=None, container_formats=None):
        self.disk_formats = list(disk_formats or DEFAULT_DISK_FORMATS)
        self.container_formats = list(container_formats or
                                      DEFAULT_CONTAINER_FORMATS)
        self.images = {}
        self.used_ids = set()
        self.members = {}
        self.poisoned = set()
        self.failures = {}
        self.calls = []
        self.lose_create_response = False
        #: The project Glance makes the owner of a created image (the
        #: token's), or None for an image without one.
        self.owner = None
        self.versions = [{'id': 'v2.17', 'status': 'CURRENT'},
                         {'id': 'v2.0', 'status': 'SUPPORTED'}]
        #: ``/v2/info/stores`` entries; ``None``: not multi-store (404).
        self.stores = None
        #: URL -> bytes served for locations.
        self.objects = {}
        self.show_multiple_locations = False
        self.tasks = {}
        self.pending = {}
        self.task_fails_with = None
        #: Images created so far (each gets the next second as its
        #: ``created_at``).
        self.created = 0
        #: ``GET /v2/info/usage``'s ``usage`` document (``{}`` without
        #: unified limits); ``None``: a glanceclient without ``info``.
        self.usage = None

    def fail(self, operation, error, times=1):
        """Make the next ``times`` calls of ``operation`` raise ``error``."""
        self.failures[operation] = [error] * times

    def _maybe_fail(self, operation):
        self.calls.append(operation)
        queue = self.failures.get(operation)
        if queue:
            raise queue.pop(0)

    def schema(self):
        props = {name: {'type': 'string'} for name in BASE}
        # The attributes the plugin sets, as Glance 33 defines them.
        props['name'] = {'type': ['null', 'string'], 'maxLength': 255}
        props['visibility'] = {'type': 'string', 'enum': [
            'community', 'public', 'private', 'shared']}
        for name in ('min_ram', 'min_disk'):
            props[name] = {'type': 'integer'}
        props['disk_format'] = {'enum': [None] + self.disk_formats}
        props['container_format'] = {'enum': [None] +
                                     self.container_formats}
        return {'name': 'image', 'properties': props,
                'additionalProperties': {'type': 'string'}}

    def client(self):
        return _Client(self)


class _Images:
    def __init__(self, glance):
        self.g = glance

    def _check(self, kwargs):
        if kwargs.get('disk_format') not in [None] + self.g.disk_formats:
            raise TypeError("Unable to set 'disk_format' to '%s'"
                            % kwargs.get('disk_format'))
        for key, value in kwargs.items():
            if key not in BASE and not isinstance(value, str):
                raise TypeError('Unable to set %r: not a string' % key)

    def create(self, **kwargs):
        g = self.g
        g._maybe_fail('create')
        self._check(kwargs)
        image_id = kwargs.get('id') or str(uuid.uuid4())
        if image_id in g.used_ids:
            raise exc.HTTPConflict('Image ID %s already exists!' % image_id)
        g.used_ids.add(image_id)
        g.created += 1
        image = dict(kwargs, id=image_id, status='queued', size=None,
                     visibility=kwargs.get('visibility', 'shared'),
                     created_at='2026-12-01T00:%02d:%02dZ' % divmod(
                         g.created % 3600, 60))
        if g.owner is not None:
            image['owner'] = g.owner
        g.images[image_id] = image
        if g.lose_create_response:
            g.lose_create_response = False
            raise exc.CommunicationError('connection reset after POST')
        return dict(image)

    def update(self, image_id, **kwargs):
        self.g._maybe_fail('update')
        if image_id not in self.g.images:
            raise exc.HTTPNotFound('No image found with ID %s' % image_id)
        self.g.images[image_id].update(kwargs)
        return dict(self.g.images[image_id])

    def get(self, image_id):
        self.g._maybe_fail('get')
        if image_id not in self.g.images:
            raise exc.HTTPNotFound('No image found with ID %s' % image_id)
        self._run_task(image_id)
        return dict(self.g.images[image_id])

    def _run_task(self, image_id):
        g = self.g
        pending = g.pending.pop(image_id, None)
        if pending is None:
            return
        task, url, validation = pending
        image = g.images[image_id]
        data = g.objects.get(url)
        message = g.task_fails_with
        if message is None and not data:
            message = 'Invalid location'
        if message is None and validation:
            algo = validation['os_hash_algo']
            if hashlib.new(algo, data).hexdigest() != (
                    validation['os_hash_value']):
                message = 'Image hash verification failed'
        if message:
            task.update(status='failure', message=message)
            return
        task.update(status='success', message='')
        algo = (validation or {}).get('os_hash_algo', 'sha512')
        image.update(status='active', size=len(data), locations=[
            {'url': url, 'metadata': {}}], os_hash_algo=algo,
            os_hash_value=hashlib.new(algo, data).hexdigest())

    def add_image_location(self, image_id, location_url,
                           validation_data={}):
        g = self.g
        if not any(v['id'] == 'v2.17' for v in g.versions):
            raise exc.HTTPNotImplemented(
                'This operation is not supported by Glance.')
        g._maybe_fail('add_image_location')
        image = g.images.get(image_id)
        if image is None:
            raise exc.HTTPNotFound('No image found with ID %s' % image_id)
        if image['status'] != 'queued':
            raise exc.HTTPConflict("It's not allowed to add locations if "
                                   "image status is %s." % image['status'])
        task = {'id': str(uuid.uuid4()), 'type': 'location_import',
                'status': 'processing', 'message': '',
                'created_at': '2025-01-01T00:00:%02dZ' % len(g.tasks)}
        g.tasks.setdefault(image_id, []).append(task)
        g.pending[image_id] = (task, location_url, dict(validation_data))
        return dict(image)

    def add_location(self, image_id, url, metadata, validation_data=None):
        g = self.g
        g._maybe_fail('add_location')
        image = g.images.get(image_id)
        if image is None:
            raise exc.HTTPNotFound('No image found with ID %s' % image_id)
        if not g.show_multiple_locations:
            raise exc.HTTPForbidden("It's not allowed to add locations if "
                                    "locations are invisible.")
        if image['status'] not in ('queued', 'active'):
            raise exc.HTTPConflict("It's not allowed to add locations if "
                                   "image status is %s." % image['status'])
        data = g.objects.get(url)
        if not data:
            raise exc.HTTPBadRequest('Invalid location')
        image.update(status='active', size=len(data),
                     locations=[{'url': url, 'metadata': metadata}])
        if validation_data:
            image.update(validation_data)
        return dict(image)

    def get_associated_image_tasks(self, image_id):
        self.g._maybe_fail('tasks')
        return {'tasks': [dict(t) for t in self.g.tasks.get(image_id, [])]}

    def delete(self, image_id):
        self.g._maybe_fail('delete')
        if self.g.images.pop(image_id, None) is None:
            raise exc.HTTPNotFound('No image found with ID %s' % image_id)

    def upload(self, image_id, data, image_size=None):
        g = self.g
        g._maybe_fail('upload')
        image = g.images.get(image_id)
        if image is None:
            raise exc.HTTPNotFound('No image found with ID %s' % image_id)
        if image_id in g.poisoned:
            raise exc.HTTPInternalServerError('Image already exists')
        if image['status'] != 'queued':
            raise exc.HTTPConflict('Image status transition from %s to '
                                   'saving is not allowed' % image['status'])
        body = data.read() if hasattr(data, 'read') else (data or b'')
        if (not body and image['disk_format'] != 'raw' and
                image['container_format'] == 'bare'):
            g.poisoned.add(image_id)
            raise exc.HTTPException(
                'HTTP 415 Unsupported Media Type: Image disk_format %s '
                'does not match stream data raw' % image['disk_format'])
        image.update(status='active', size=len(body))

    def data(self, image_id):
        return iter([b''])

    def list(self, filters=None):
        self.g._maybe_fail('list')
        wanted = dict(filters or {})
        hidden = wanted.pop('os_hidden', False)
        # Glance: each ``tag`` is one more exact-match AND condition.
        tags = wanted.pop('tag', [])
        return iter(dict(i) for i in self.g.images.values()
                    if bool(i.get('os_hidden', False)) == bool(hidden)
                    and all(t in (i.get('tags') or []) for t in tags)
                    and all(i.get(k) == v for k, v in wanted.items()))

    def get_stores_info(self):
        if self.g.stores is None:
            raise exc.HTTPNotFound('Multi backend is not supported')
        return {'stores': [dict(s) for s in self.g.stores]}


class _Members:
    def __init__(self, glance):
        self.g = glance

    def create(self, image_id, member_id):
        g = self.g
        g._maybe_fail('add_member')
        image = g.images.get(image_id)
        if image is None:
            raise exc.HTTPNotFound(image_id)
        if image['visibility'] != 'shared':
            raise exc.HTTPForbidden('Only shared images have members.')
        members = g.members.setdefault(image_id, [])
        if member_id in members:
            raise exc.HTTPConflict('already a member')
        members.append(member_id)
        return {'image_id': image_id, 'member_id': member_id,
                'status': 'pending'}

    def list(self, image_id):
        return [{'member_id': m} for m in self.g.members.get(image_id, [])]


class _Schemas:
    def __init__(self, glance):
        self.g = glance

    def get(self, name):
        self.g._maybe_fail('schema')
        return _Schema(self.g.schema())


class _Versions:
    def __init__(self, glance):
        self.g = glance

    def list(self):
        # Not recorded in ``calls`` (tests count requests that matter).
        queue = self.g.failures.get('versions')
        if queue:
            raise queue.pop(0)
        return list(self.g.versions)


class _HTTPClient:
    """glanceclient's ``http_client``: the routes the wrapper calls directly.

    ``post``/``put``/``get`` answer ``(response, body)`` like glanceclient's
    ``SessionClient``; each route runs the matching controller method
    above (same failure injection names).  A body Glance's schema refuses
    is a 400 here (``images.create`` refuses it client-side).  Without
    v2.17 Glance has no ``/locations`` route: 404, as its router answers.
    """

    def __init__(self, glance, images):
        self.g = glance
        self.images = images

    def get_endpoint(self):
        return 'http://glance.test:9292'

    def post(self, url, data=None, headers=None):
        parts = url.strip('/').split('/')
        if parts == ['v2', 'images']:
            try:
                return None, self.images.create(**data)
            except TypeError as err:  # Glance's own schema check: 400
                raise exc.HTTPBadRequest(str(err))
        if parts[:2] == ['v2', 'images'] and parts[3:] == ['locations']:
            if not any(v['id'] == 'v2.17' for v in self.g.versions):
                raise exc.HTTPNotFound('The resource could not be found.')
            self.images.add_image_location(
                parts[2], data['url'], data.get('validation_data') or {})
            return None, None
        raise AssertionError('unexpected POST %s' % url)

    def put(self, url, data=None, headers=None):
        parts = url.strip('/').split('/')
        if parts[:2] == ['v2', 'images'] and parts[3:] == ['file']:
            size = (headers or {}).get('x-openstack-image-size')
            if size is None:
                return None, self.images.upload(parts[2], data)
            return None, self.images.upload(parts[2], data,
                                            image_size=int(size))
        raise AssertionError('unexpected PUT %s' % url)

    def get(self, url, headers=None):
        parts = url.strip('/').split('/')
        if parts[:2] == ['v2', 'images'] and parts[3:] == ['tasks']:
            return None, self.images.get_associated_image_tasks(parts[2])
        raise AssertionError('unexpected GET %s' % url)


class _Info:
    def __init__(self, glance):
        self.g = glance

    def get_usage(self):
        self.g._maybe_fail('usage')
        return {name: dict(entry) for name, entry in self.g.usage.items()}


class _Client:
    def __init__(self, glance):
        self._glance = glance
        self.images = _Images(glance)
        self.image_members = _Members(glance)
        self.schemas = _Schemas(glance)
        self.versions = _Versions(glance)
        self.http_client = _HTTPClient(glance, self.images)

    @property
    def info(self):
        # Like a glanceclient older than the usage call when unset.
        if self._glance.usage is None:
            raise AttributeError('info')
        return _Info(self._glance)


class FakeGlanceFixture(fixtures.Fixture):
    """Patch ``glanceclient.Client`` as used by our wrapper.

    :ivar glance: the :class:`FakeGlance` state.
    """

    def __init__(self, **kwargs):
        super().__init__()
        self.glance = FakeGlance(**kwargs)

    def _setUp(self):
        self.useFixture(fixtures.MockPatch(
            'nova_snapshot_ext.image.glance.glanceclient.Client',
            side_effect=lambda *a, **k: self.glance.client()))
