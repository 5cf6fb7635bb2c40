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

"""What a Glance allows, discovered through its API and cached.

Sources (Glance 33, ``glance/api/v2/images.py`` and ``versions.py``):

* ``GET /v2/schemas/image``: ``disk_format``/``container_format`` enums
  are ``[null] + [image_format] disk_formats/container_formats`` in the
  operator's order; ``properties`` names the base attributes; an optional
  ``required`` list (Glance >= 32 extended schema).
* ``GET /versions``: ``v2.17`` listed means the service location API
  (``POST /v2/images/{id}/locations``) exists.
* ``GET /v2/info/stores``: 404 unless multi-store; the http store is
  reported ``read-only`` (``{"id": "web", "read-only": "true"}``).

What cannot be discovered: ``require_image_format_match`` (a 415 at run
time tells), ``image_property_quota`` (an option of ours mirrors it),
whether the legacy location API is on (``show_multiple_locations``: only a
PATCH that adds a location tells, 403 when off) and, without multi-store,
whether the http store is enabled.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import typing as ty

from oslo_log import log as logging

from nova_snapshot_ext import exception

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.image import glance as glance_mod

LOG = logging.getLogger(__name__)

#: The API version that brought ``POST /v2/images/{id}/locations``.
LOCATION_API_VERSION = (2, 17)


def _version_tuple(version_id: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(p) for p in version_id.lstrip('v').split('.'))
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class GlanceCapabilities:
    """A Glance's discovered capabilities.

    :ivar disk_formats: allowed ``disk_format`` values, operator order.
    :ivar container_formats: allowed ``container_format`` values.
    :ivar base_attributes: names the image schema defines as attributes
        (not custom properties): ``name``, ``visibility``, ``size``...
    :ivar schema_properties: the schema's ``properties`` object.
    :ivar required: names the schema requires on create.
    :ivar api_versions: version ids listed by ``/versions``
        (e.g. ``'v2.17'``), any status.
    :ivar stores: ``/v2/info/stores`` entries, or ``None`` when Glance is
        not multi-store.
    :ivar fetched_at: ``time.monotonic()`` of discovery.
    :ivar unread: documents that could not be read (``'versions'``,
        ``'stores'``) -> the error, after one retry and with no earlier
        answer to fall back on: what they tell is unknown (an upload
        needs neither; a location attempt needs both).
    :ivar unified_limits: ``False`` once ``GET /v2/info/usage`` showed
        that this Glance enforces no Keystone unified limits (an empty
        document, or no usage API): then no snapshot asks again while
        the entry is fresh.  ``None``: not known (ask every snapshot;
        the usage is the project's and changes).  Learned by the
        preflight (:meth:`CapabilityCache.learned`), not by discovery.
    """

    disk_formats: tuple[str, ...]
    container_formats: tuple[str, ...]
    base_attributes: frozenset[str]
    schema_properties: ty.Mapping[str, ty.Any]
    required: tuple[str, ...] = ()
    api_versions: tuple[str, ...] = ()
    stores: tuple[ty.Mapping[str, str], ...] | None = None
    fetched_at: float = 0.0
    unread: ty.Mapping[str, exception.GlanceError] = dataclasses.field(
        default_factory=dict)
    unified_limits: bool | None = None

    @classmethod
    def from_documents(cls, schema: ty.Mapping[str, ty.Any],
                       versions: ty.Iterable[ty.Mapping[str, ty.Any]] = (),
                       stores: ty.Iterable[ty.Mapping[str, str]] | None
                       = None) -> GlanceCapabilities:
        """Build from the raw API documents.

        :raises GlanceError: the schema lacks the format enums.
        """
        props = schema.get('properties') or {}
        try:
            disk = [f for f in props['disk_format']['enum'] if f]
            container = [f for f in props['container_format']['enum'] if f]
        except (KeyError, TypeError):
            raise exception.GlanceError(
                operation='schema', reason='the image schema has no '
                'disk_format/container_format enum')
        return cls(
            disk_formats=tuple(disk),
            container_formats=tuple(container),
            base_attributes=frozenset(props),
            schema_properties=props,
            required=tuple(schema.get('required') or ()),
            api_versions=tuple(str(v.get('id')) for v in versions),
            stores=None if stores is None else tuple(stores),
            fetched_at=time.monotonic())

    @property
    def location_api(self) -> bool:
        """True when ``/versions`` lists API v2.17 or later."""
        for vid in self.api_versions:
            vt = _version_tuple(vid)
            if vt and vt >= LOCATION_API_VERSION:
                return True
        return False

    @property
    def read_only_stores(self) -> list[str] | None:
        """Ids of stores reported ``read-only`` (the http store).

        ``None`` when Glance is not multi-store: it cannot be told.
        """
        if self.stores is None:
            return None
        return [str(s.get('id')) for s in self.stores
                if str(s.get('read-only', '')).lower() == 'true']

    def to_dict(self) -> dict[str, ty.Any]:
        """JSON-able summary (for ``probe``)."""
        return {
            'disk_formats': list(self.disk_formats),
            'container_formats': list(self.container_formats),
            'required_properties': list(self.required),
            'api_versions': list(self.api_versions),
            'location_api': self.location_api,
            'read_only_stores': self.read_only_stores,
            'stores': None if self.stores is None else [
                dict(s) for s in self.stores],
            'unread': {name: err.format_message()
                       for name, err in self.unread.items()},
        }


def _transient(err: exception.GlanceError) -> bool:
    """A failure that says nothing about what this Glance allows."""
    return (isinstance(err, (exception.GlanceUnavailable,
                             exception.GlanceMalformedAnswer)) or
            err.status is None or err.status >= 500)


def _read(what: str, func: ty.Callable[[], ty.Any]) -> ty.Any:
    """One discovery read, asked again once after a transient failure.

    keystoneauth already re-sends a GET after a connection failure or a
    502/503/504; a 500 or a garbled body is asked once more here (a GET,
    so a second send changes nothing).

    :raises GlanceError: the second failure, or the first that is not
        transient (Glance's own answer, e.g. 404).
    """
    try:
        return func()
    except exception.GlanceError as err:
        if not _transient(err):
            raise
        LOG.warning('Glance %s could not be read (%s); asking once more',
                    what, err)
    return func()


def discover(client: glance_mod.GlanceClient,
             previous: GlanceCapabilities | None = None
             ) -> GlanceCapabilities:
    """Ask ``client``'s Glance for its capabilities (3 GET requests).

    Each read is asked once more after a transient failure (transport,
    5xx, unreadable answer; :func:`_read`).

    :param previous: the last complete discovery of this Glance, if any:
        a ``/versions`` or ``/v2/info/stores`` read that still fails is
        answered from it.
    :raises GlanceError: the schema could not be read (the caller may
        serve ``previous``).  A transient failure of ``/versions`` or
        ``/v2/info/stores`` never raises: without ``previous`` it is
        recorded in :attr:`GlanceCapabilities.unread` -- never taken for a
        Glance without the location API or without stores.  A 4xx of
        those two is Glance's answer: logged and read as "no location
        API" / "not multi-store".
    """
    schema = _read('image schema', client.image_schema)
    unread: dict[str, exception.GlanceError] = {}
    versions: ty.Iterable[ty.Mapping[str, ty.Any]]
    try:
        versions = _read('API versions', client.api_versions)
    except exception.GlanceError as err:
        if _transient(err) and previous is not None and (
                'versions' not in previous.unread):
            versions = [{'id': v} for v in previous.api_versions]
        elif _transient(err):
            unread['versions'] = err
            versions = []
        else:
            LOG.warning('Could not list Glance API versions: %s', err)
            versions = []
    stores: ty.Iterable[ty.Mapping[str, str]] | None
    try:
        stores = _read('stores', client.stores)
    except exception.GlanceError as err:
        if _transient(err) and previous is not None and (
                'stores' not in previous.unread):
            stores = previous.stores
        elif _transient(err):
            unread['stores'] = err
            stores = None
        else:
            LOG.warning('Could not list Glance stores: %s', err)
            stores = None
    caps = GlanceCapabilities.from_documents(schema, versions, stores)
    if unread:
        LOG.warning('Glance %s could not be read: %s; uploads do not need '
                    'them, a location attempt is not planned', ' and '.join(
                        unread), '; '.join(str(e) for e in unread.values()))
        caps = dataclasses.replace(caps, unread=unread)
    return caps


class CapabilityCache:
    """Capabilities per Glance endpoint, reused for ``ttl`` seconds.

    Thread-safe.  :meth:`invalidate` drops an entry at once (called after a
    refusal that shows the operator reconfigured Glance).  A discovery
    whose schema read fails is answered with the last good entry when
    there is one (however old: a blip says nothing about what Glance
    allows), else it raises; a discovery with :attr:`~GlanceCapabilities.
    unread` documents is used once and asked again next time.

    :param ttl: seconds; 0 means always discover.
    """

    def __init__(self, ttl: float = 300.0):
        self.ttl = ttl
        self._lock = threading.Lock()
        self._discovery_lock = threading.Lock()
        self._entries: dict[str, GlanceCapabilities] = {}

    def _fresh(self, key: str) -> GlanceCapabilities | None:
        with self._lock:
            caps = self._entries.get(key)
        if caps and time.monotonic() - caps.fetched_at < self.ttl:
            return caps
        return None

    def get(self, client: glance_mod.GlanceClient) -> GlanceCapabilities:
        """The capabilities of ``client``'s Glance, discovered if stale.

        One discovery at a time: threads that find the entry stale while
        another thread discovers wait for its result instead of all asking
        Glance at once when the TTL runs out.
        """
        key = client.endpoint
        caps = self._fresh(key)
        if caps:
            return caps
        with self._discovery_lock:
            caps = self._fresh(key)
            if caps:
                return caps
            with self._lock:
                previous = self._entries.get(key)
            try:
                caps = discover(client, previous)
            except exception.GlanceError as err:
                if previous is None or not _transient(err):
                    raise
                LOG.warning('Glance capabilities could not be read again '
                            '(%s); using those read %.0f s ago', err,
                            time.monotonic() - previous.fetched_at)
                return previous
            if caps.unread:
                return caps
            with self._lock:
                self._entries[key] = caps
        return caps

    def learned(self, client: glance_mod.GlanceClient,
                **facts: ty.Any) -> None:
        """Keep what a later read told about ``client``'s Glance.

        E.g. ``unified_limits=False``: the fact lives in the entry, and
        goes with it when the entry expires or is invalidated.  Nothing
        is kept when there is no entry (a discovery with ``unread``
        documents, which is never cached).

        :param facts: :class:`GlanceCapabilities` fields and values.
        """
        with self._lock:
            caps = self._entries.get(client.endpoint)
            if caps is not None:
                self._entries[client.endpoint] = dataclasses.replace(
                    caps, **facts)

    def invalidate(self, client: glance_mod.GlanceClient | None = None
                   ) -> None:
        """Drop the entry of ``client``'s Glance (all entries: ``None``).

        After a refusal that shows the operator reconfigured Glance: the
        next :meth:`get` discovers afresh and has no old entry to fall
        back on.
        """
        with self._lock:
            if client is None:
                self._entries.clear()
            else:
                self._entries.pop(client.endpoint, None)
