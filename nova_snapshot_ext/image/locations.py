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

"""Safety rules for activating an image through a location (issue 4).

A location makes Glance read an image's data from a URL instead of an
upload.  The plugin points every such image at one small object named by
``[snapshot_ext] location_url``, so the rules are strict (design.md §4
rules 1, 7, 8):

* **http(s) only.**  ``file://``, ``swift+config://``, ``rbd://``,
  ``cinder://`` ... are refused with
  :class:`~nova_snapshot_ext.exception.ConfigurationError`: an object shared
  by many images must live on a store Glance cannot delete from, and
  Glance's http store is read-only.
* **A read-only store.**  When ``GET /v2/info/stores`` lists stores, one of
  them must report ``read-only: true`` (the http store) -- otherwise the
  http store is not enabled and Glance refuses http locations.
* **Non-empty, honest content.**  The object is downloaded once (through
  the plugin's keystoneauth session, *unauthenticated*: no token goes to
  the web server): zero bytes, an error status or an unreachable server
  refuse it before anything is created (Glance would only fail later, in
  its asynchronous task, since a location must be > 0 bytes); its content
  must be what ``[snapshot_ext] location_disk_format`` says according to
  ``oslo_utils.imageutils.format_inspector``, exactly as Glance judges an
  upload.  Its hash becomes the ``validation_data`` sent to Glance.
* **No credentials in logs.**  :func:`~nova_snapshot_ext.redaction.
  redact_url` drops the user info,
  query string and fragment of a URL; only that form is ever logged,
  stored in a result or put into an exception message.

Waiting for the import (:class:`ImportWait`): ``POST
/v2/images/{id}/locations`` answers 202 and Glance's ``location_import``
task activates the image later.  The image is read first when the import
is expected to be done (:class:`ImportEstimate`, learnt from earlier
imports), then at growing intervals (:func:`poll_delays`); its tasks are
read only when it stays ``queued`` (a failed task leaves it so).

Sources: glance-facts.md §3-4 (Glance 33 ``glance/api/v2/images.py``
``add_location``, ``glance/location.py`` ``_check_location_uri``),
real-glance.md section f.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import math
import re
import threading
import time
import typing as ty
import urllib.parse

from oslo_log import log as logging
from oslo_utils.imageutils import format_inspector

from nova_snapshot_ext import exception
from nova_snapshot_ext import redaction

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.image import capabilities as caps_mod

LOG = logging.getLogger(__name__)

OPTION = 'location_url'
GROUP = 'snapshot_ext'

#: URL schemes accepted for ``[snapshot_ext] location_url``.
ALLOWED_SCHEMES = ('http', 'https')

#: ``disk_format`` values the format inspector can vouch for.  Formats
#: without an inspector (``ploop``, ``ami``, ``aki``, ``ari``) would be
#: unverified labels, which design rule 1 forbids.
INSPECTABLE_FORMATS = ('raw', 'qcow2', 'vmdk', 'vhd', 'vhdx', 'vdi', 'iso')

#: Largest object the plugin downloads to check (bytes).  The object is
#: meant to be tiny (the plugin's own payloads are <= 4 MiB).
MAX_OBJECT_BYTES = 64 * 1024 * 1024

#: Digest length (hex characters) of each ``os_hash_algo``.
HEX_LENGTHS = {'md5': 32, 'sha1': 40, 'sha256': 64, 'sha512': 128}

_HEX_RE = re.compile(r'^[0-9a-f]+$')
_CHUNK = 64 * 1024


#: Redaction lives in :mod:`nova_snapshot_ext.redaction`; these names stay
#: for callers of this module.
redact_url = redaction.redact_url
scrub = redaction.scrub
protect_in_logs = redaction.protect_in_logs


def _config_error(reason: str, option: str = OPTION
                  ) -> exception.ConfigurationError:
    return exception.ConfigurationError(group=GROUP, option=option,
                                        reason=reason)


def check_url(url: str | None) -> str:
    """Refuse a ``[snapshot_ext] location_url`` that is not safe to share.

    :param url: the configured URL.
    :returns: the URL, stripped.
    :raises ConfigurationError: unset, unparsable, no host, or a scheme
        other than ``http``/``https`` (``file``, ``swift+config``, ``rbd``,
        ``cinder``, ``s3``... are refused: Glance may delete from those
        stores, or they are local to one host).
    """
    if not url or not url.strip():
        raise _config_error('it must be set when [snapshot_ext] '
                            'activation_method uses a location')
    url = url.strip()
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as err:
        raise _config_error('not a valid URL (%s)' % err)
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise _config_error(
            "scheme '%s' is not allowed; only http and https objects live "
            "on a read-only store that Glance cannot delete from (%s)"
            % (scheme or '(none)', redact_url(url)))
    if not host:
        raise _config_error('the URL has no host (%s)' % redact_url(url))
    return url


def check_disk_format(disk_format: str) -> str:
    """Refuse a ``location_disk_format`` the inspector cannot verify.

    :raises ConfigurationError: a format not in
        :data:`INSPECTABLE_FORMATS`.
    """
    if disk_format not in INSPECTABLE_FORMATS:
        raise _config_error(
            "'%s' cannot be verified by the format inspector; use one of %s"
            % (disk_format, ', '.join(INSPECTABLE_FORMATS)),
            option='location_disk_format')
    return disk_format


def parse_validation_data(text: str | None) -> dict[str, str] | None:
    """Parse ``[snapshot_ext] location_validation_data``.

    :param text: ``'<algo>:<hex digest>'`` or ``None``.
    :returns: ``{'os_hash_algo': algo, 'os_hash_value': hex}`` or
        ``None``.
    :raises ConfigurationError: unknown algorithm, or a digest that is not
        lowercase hex of the algorithm's length (Glance answers 400).
    """
    if not text:
        return None
    algo, sep, value = text.strip().partition(':')
    algo = algo.strip().lower()
    value = value.strip().lower()
    if not sep or algo not in HEX_LENGTHS:
        raise _config_error(
            "expected '<algo>:<hex digest>' with algo one of %s"
            % ', '.join(sorted(HEX_LENGTHS)),
            option='location_validation_data')
    if len(value) != HEX_LENGTHS[algo] or not _HEX_RE.match(value):
        raise _config_error(
            'a %s digest is %d hexadecimal characters'
            % (algo, HEX_LENGTHS[algo]), option='location_validation_data')
    return {'os_hash_algo': algo, 'os_hash_value': value}


def detect_format(data: bytes) -> str:
    """The disk format ``oslo.utils``' inspector sees in ``data``.

    Runs the same streaming inspector Glance runs on uploads.

    :param data: the whole object.
    :returns: a format name (``'raw'`` when nothing specific matched).
    :raises ValueError: several formats match, or a safety check fails
        (the text says which).
    """
    wrapper = format_inspector.InspectWrapper(io.BytesIO(data))
    try:
        while wrapper.read(_CHUNK):
            pass
    finally:
        wrapper.close()
    try:
        inspector = wrapper.format
    except format_inspector.ImageFormatError as err:
        raise ValueError(str(err))
    if inspector is None:  # pragma: no cover - EOF always decides
        raise ValueError('the format inspector reached no decision')
    try:
        inspector.safety_check()
    except format_inspector.SafetyCheckFailed as err:
        raise ValueError('%s safety check failed: %s' % (inspector, err))
    return str(inspector)


@dataclasses.dataclass(frozen=True)
class LocationObject:
    """The checked object behind ``[snapshot_ext] location_url``.

    :ivar url: the real URL (a secret: never log it, ``repr`` hides it).
    :ivar redacted: :func:`redact_url` of it, for messages.
    :ivar disk_format: its verified Glance disk_format.
    :ivar size: its length in bytes (> 0).
    :ivar validation_data: ``{'os_hash_algo', 'os_hash_value'}`` sent to
        Glance, or ``None`` (``location_hash_algo = none``).
    :ivar checked_at: ``time.monotonic()`` of the download.
    """

    url: str = dataclasses.field(repr=False)
    redacted: str
    disk_format: str
    size: int
    validation_data: dict[str, str] | None = None
    checked_at: float = 0.0


def fetch(session: ty.Any, url: str,
          max_bytes: int = MAX_OBJECT_BYTES) -> bytes:
    """Download ``url`` once, unauthenticated, through ``session``.

    :param session: a keystoneauth1 session (its TLS settings apply; no
        token is sent and keystoneauth does not log the request, whose
        URL may carry credentials).
    :param url: the object URL.
    :param max_bytes: refuse larger objects.
    :returns: the object's bytes.
    :raises LocationUnusable: unreachable, a non-2xx answer, or larger than
        ``max_bytes``.
    """
    redacted = redact_url(url)
    try:
        resp = session.request(url, 'GET', authenticated=False, log=False,
                               raise_exc=False, stream=True)
    except Exception as err:  # noqa: B902 - keystoneauth/requests errors
        raise exception.LocationUnusable(
            url=redacted, reason='it could not be downloaded (%s)'
            % scrub(type(err).__name__ + ': ' + str(err), url)[:300])
    try:
        if not 200 <= resp.status_code < 300:
            raise exception.LocationUnusable(
                url=redacted, reason='the web server answered HTTP %s'
                % resp.status_code)
        chunks = []
        total = 0
        for chunk in resp.iter_content(_CHUNK):
            total += len(chunk)
            if total > max_bytes:
                raise exception.LocationUnusable(
                    url=redacted, reason='it is larger than %d bytes; use a '
                    'small object such as an empty image' % max_bytes)
            chunks.append(chunk)
        return b''.join(chunks)
    finally:
        close = getattr(resp, 'close', None)
        if close:
            close()


def check_object(url: str, data: bytes, disk_format: str,
                 hash_algo: str | None = 'sha512',
                 expected: dict[str, str] | None = None) -> LocationObject:
    """Check the downloaded object and compute its validation data.

    :param url: the object URL.
    :param data: its content.
    :param disk_format: ``[snapshot_ext] location_disk_format``.
    :param hash_algo: ``location_hash_algo`` (``None``/``'none'``: no
        validation data unless ``expected`` is given).
    :param expected: parsed ``location_validation_data``, if set.
    :returns: a :class:`LocationObject`.
    :raises LocationUnusable: empty, not ``disk_format``, or a hash other
        than ``expected``.
    """
    redacted = redact_url(url)
    if not data:
        raise exception.LocationUnusable(
            url=redacted, reason='the object is empty (0 bytes); Glance '
            'refuses a location whose size is not greater than 0')
    try:
        detected = detect_format(data)
    except ValueError as err:
        raise exception.LocationUnusable(
            url=redacted, reason='its content is not a valid %s image: %s'
            % (disk_format, err))
    if detected != disk_format:
        raise exception.LocationUnusable(
            url=redacted, reason="its content is %s, not %s (option "
            "[snapshot_ext] location_disk_format)" % (detected, disk_format))
    validation = None
    if expected:
        algo = expected['os_hash_algo']
        actual = hashlib.new(algo, data).hexdigest()
        if actual != expected['os_hash_value']:
            raise exception.LocationUnusable(
                url=redacted, reason='its %s is %s, not the %s of option '
                '[snapshot_ext] location_validation_data'
                % (algo, actual, expected['os_hash_value']))
        validation = dict(expected)
    elif hash_algo and hash_algo != 'none':
        validation = {'os_hash_algo': hash_algo,
                      'os_hash_value': hashlib.new(hash_algo,
                                                   data).hexdigest()}
    return LocationObject(url=url, redacted=redacted,
                          disk_format=disk_format, size=len(data),
                          validation_data=validation,
                          checked_at=time.monotonic())


def glance_refusals(capabilities: caps_mod.GlanceCapabilities,
                    disk_format: str, api: str) -> list[str]:
    """Why this Glance cannot take the location, from its capabilities.

    :param capabilities: discovered capabilities.
    :param disk_format: ``location_disk_format``.
    :param api: ``'new'`` or ``'legacy'`` (the API the plan would use).
    :returns: reasons (empty: nothing discoverable prevents it; the legacy
        API's ``show_multiple_locations`` can only be found by trying).
    """
    reasons = []
    stores = capabilities.read_only_stores
    if stores is not None and not stores:
        reasons.append(
            'this Glance reports no read-only (http) store in '
            '/v2/info/stores (stores: %s); enable the http store '
            '(enabled_backends = ...,<id>:http)' % (', '.join(
                str(s.get('id')) for s in capabilities.stores or ())
                or 'none'))
    if api == 'new' and not capabilities.location_api:
        reasons.append('this Glance does not list API v2.17 (the service '
                       'location API) in /versions')
    if disk_format not in capabilities.disk_formats:
        reasons.append("this Glance does not allow disk_format '%s'"
                       % disk_format)
    if 'bare' not in capabilities.container_formats:
        reasons.append("this Glance does not allow container_format 'bare'")
    return reasons


def choose_api(capabilities: caps_mod.GlanceCapabilities,
               preference: str) -> str:
    """Resolve ``[snapshot_ext] location_api``.

    :param preference: ``'auto'``, ``'new'`` or ``'legacy'``.
    :returns: ``'new'`` or ``'legacy'`` (``auto``: new when ``/versions``
        lists v2.17).
    """
    if preference == 'auto':
        return 'new' if capabilities.location_api else 'legacy'
    return preference


class LocationSource:
    """``[snapshot_ext] location_*`` options, checked once and cached.

    The object is downloaded on first use and the result kept for ``ttl``
    seconds (``[snapshot_ext] capabilities_cache_ttl``) or until
    :meth:`invalidate` (called after a location attempt failed: the object
    may have changed).  Thread-safe.

    :param conf: the ``[snapshot_ext]`` group view.
    :param fetcher: ``fetcher(session, url) -> bytes``; default
        :func:`fetch`.
    :raises ConfigurationError: bad URL, disk_format or validation data
        (checked at construction, so a service refuses to start with one).
    """

    def __init__(self, conf: ty.Any,
                 fetcher: ty.Callable[[ty.Any, str], bytes] | None = None):
        self.url = check_url(conf.location_url)
        self.redacted = redact_url(self.url)
        protect_in_logs(self.url)
        self.disk_format = check_disk_format(conf.location_disk_format)
        self.expected = parse_validation_data(conf.location_validation_data)
        self.hash_algo = conf.location_hash_algo
        self.api = conf.location_api
        self.ttl = conf.capabilities_cache_ttl
        #: When to read an image first after its location was accepted.
        self.import_estimate = ImportEstimate(
            highest=conf.activation_timeout)
        self._fetch = fetcher or fetch
        self._lock = threading.Lock()
        self._object: LocationObject | None = None

    def get(self, session: ty.Any) -> LocationObject:
        """The checked object (downloads it when not cached).

        :param session: keystoneauth1 session used for the download.
        :raises LocationUnusable: see :func:`fetch`, :func:`check_object`.
        """
        with self._lock:
            obj = self._object
            if obj and time.monotonic() - obj.checked_at < self.ttl:
                return obj
        data = self._fetch(session, self.url)
        obj = check_object(self.url, data, self.disk_format,
                           self.hash_algo, self.expected)
        LOG.info('Location object %(url)s checked: %(size)d B of '
                 '%(fmt)s%(hash)s', {
                     'url': obj.redacted, 'size': obj.size,
                     'fmt': obj.disk_format,
                     'hash': ', %s %s' % (
                         obj.validation_data['os_hash_algo'],
                         obj.validation_data['os_hash_value'][:16] + '...')
                     if obj.validation_data else ''})
        with self._lock:
            self._object = obj
        return obj

    def invalidate(self) -> None:
        """Forget the checked object (re-download on next use)."""
        with self._lock:
            self._object = None


# --- waiting for the location import --------------------------------------

#: Seconds from the 202 of ``POST /v2/images/{id}/locations`` to the first
#: read of the image, before any import was timed.  Glance 33 with the
#: http store, a 1.5 KiB qcow2 on loopback, sha512 validation data
#: (``python -m bench.location_timing``, 2 shared cores): the image was
#: active 135/150/176 ms (p10/p50/p90) after the 202 at concurrency 1, and
#: 1.3/2.6/4.0 s at concurrency 16.
FIRST_POLL_S = 0.1

#: Each later read comes this fraction of the time waited so far after
#: the previous one: reads at t, 1.3 t, 1.69 t...  A long import costs a
#: few reads, not one per poll interval.
POLL_GROWTH = 0.3

#: Shortest sleep between two reads of the image (seconds).
MIN_POLL_S = 0.02

#: How often the first read should find the image active.  Lower means
#: more reads per snapshot, higher means waiting longer than the import.
FIRST_READ_HIT_RATE = 0.6

#: Step of :class:`ImportEstimate` (natural log of the factor per
#: observation).
_ESTIMATE_STEP = 0.2


def poll_delays(timeout: float, first: float = FIRST_POLL_S,
                growth: float = POLL_GROWTH,
                longest: float | None = None) -> ty.Iterator[float]:
    """Seconds to sleep before each read of an image Glance imports.

    The first read comes ``first`` seconds after the location was
    accepted; each later one ``growth`` times the time waited so far after
    the previous one (at least :data:`MIN_POLL_S`, at most ``longest``).
    The delays add up to ``timeout`` exactly: the last one is cut short,
    then the iterator ends.

    :param timeout: ``[snapshot_ext] activation_timeout``, seconds (> 0).
    :param first: seconds before the first read; clipped to
        ``[MIN_POLL_S, timeout]``.
    :param growth: later delay / time waited so far (> 0).
    :param longest: ``[snapshot_ext] activation_poll_interval``: the
        longest sleep after the first read, seconds; ``None``: no bound.
    :returns: an iterator of delays in seconds, each > 0.
    """
    elapsed = 0.0
    delay = min(max(first, MIN_POLL_S), timeout)
    while timeout - elapsed > 1e-9:
        delay = min(delay, timeout - elapsed)
        yield delay
        elapsed += delay
        delay = max(MIN_POLL_S, growth * elapsed)
        if longest is not None:
            delay = min(delay, max(longest, MIN_POLL_S))


class ImportEstimate:
    """When to read an image first after its location was accepted.

    An online quantile estimate, in log space, of the time Glance takes
    from the 202 to ``active`` here: each import whose first read found
    the image active lowers it a little, each that did not raises it (to
    at least half the time of its last read that missed), so that about
    :data:`FIRST_READ_HIT_RATE` of first reads find the image active.  It
    follows the load: about 0.15 s with one snapshot at a time, seconds
    with many at once.  Thread-safe.

    :param first: the estimate before any import was seen, seconds.
    :param highest: upper bound of the estimate, seconds.
    """

    def __init__(self, first: float = FIRST_POLL_S, highest: float = 60.0):
        self._first = first
        self._highest = max(highest, MIN_POLL_S)
        self._lock = threading.Lock()
        rate = FIRST_READ_HIT_RATE
        self._down = math.exp(-_ESTIMATE_STEP * (1.0 - rate))
        self._up = math.exp(_ESTIMATE_STEP * rate)

    @property
    def first_poll(self) -> float:
        """Seconds to wait before the first read of the next import."""
        with self._lock:
            return self._first

    def record(self, reads: int, last_miss: float = 0.0) -> None:
        """Learn from one import that ended ``active``.

        :param reads: reads of the image it took (1: the first read found
            it active).
        :param last_miss: seconds after the 202 of the last read that did
            not find it active (ignored when ``reads == 1``).
        """
        with self._lock:
            if reads <= 1:
                value = self._first * self._down
            else:
                value = max(self._first * self._up, last_miss / 2.0)
            self._first = min(max(value, MIN_POLL_S), self._highest)


class ImportWait:
    """One wait for a location import: when to read, and what is learnt.

    Iterate to get the seconds to sleep before each read of the image
    (:func:`poll_delays`, first read at ``estimate.first_poll``).  After a
    read that did not find the image active call :meth:`saw`; it says
    whether to read the image's tasks now.  When the image is active call
    :meth:`active`, which teaches the estimate.

    Tasks are read only while the image is ``queued`` (a failed
    ``location_import`` task leaves it so): at once when it went back to
    ``queued`` after ``importing``; otherwise from twice the first delay
    on, then each time the wait has doubled -- a failure shows within a
    few reads, and an import merely waiting for Glance's task pool costs
    few task reads.

    :param estimate: the service's :class:`ImportEstimate`.
    :param timeout: ``[snapshot_ext] activation_timeout``, seconds.
    :param longest: ``[snapshot_ext] activation_poll_interval``, seconds.
    """

    def __init__(self, estimate: ImportEstimate, timeout: float,
                 longest: float | None = None):
        self.estimate = estimate
        self.first = min(max(estimate.first_poll, MIN_POLL_S), timeout)
        self.timeout = timeout
        self.longest = longest
        #: Planned seconds since the 202 of the current read.
        self.offset = 0.0
        #: Reads so far.
        self.reads = 0
        self._last_miss = 0.0
        self._left_queued = False
        self._tasks_due = 2.0 * self.first

    def __iter__(self) -> ty.Iterator[float]:
        for delay in poll_delays(self.timeout, self.first,
                                 longest=self.longest):
            self.offset += delay
            self.reads += 1
            yield delay

    def saw(self, status: str) -> bool:
        """Note a read that found ``status`` (not ``active``).

        :returns: True when the image's tasks should be read now.
        """
        self._last_miss = self.offset
        if status != 'queued':
            self._left_queued = True
            return False
        if self._left_queued:
            return True  # back to queued: the task failed and reverted
        if self.offset >= self._tasks_due:
            self._tasks_due = 2.0 * self.offset
            return True
        return False

    def active(self) -> None:
        """The image is active: teach the estimate."""
        self.estimate.record(self.reads, self._last_miss)
