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

"""URL safety, redaction and object checks for location activation."""

import hashlib
import logging as std_logging
from unittest import mock

from glanceclient import exc as gexc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import service_token
import requests

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import capabilities
from nova_snapshot_ext.image import glance
from nova_snapshot_ext.image import locations
from nova_snapshot_ext.image import payloads
from tests import base
from tests.unit import fake_glanceclient

QCOW2 = payloads.payload('qcow2')
URL = 'http://obj.example:8080/empty.qcow2'


class TestRedactUrl(base.TestCase):

    def test_plain_url_unchanged(self):
        self.assertEqual(URL, locations.redact_url(URL))

    def test_userinfo_query_and_fragment_dropped(self):
        text = locations.redact_url(
            'https://alice:s3cret@h.example:443/a/b.img?sig=XYZ&e=1#frag')
        self.assertEqual('https://***@h.example:443/a/b.img?***', text)
        for secret in ('alice', 's3cret', 'XYZ', 'sig', 'frag'):
            self.assertNotIn(secret, text)

    def test_user_only_and_empty_query(self):
        self.assertEqual('http://***@h/x?***',
                         locations.redact_url('http://tok@h/x?'))

    def test_ipv6_host(self):
        self.assertEqual('http://[::1]:81/x',
                         locations.redact_url('http://[::1]:81/x'))

    def test_unset_and_garbage(self):
        self.assertEqual('<unset>', locations.redact_url(None))
        self.assertEqual('<unparsable URL>',
                         locations.redact_url('no scheme here'))
        self.assertEqual('<unparsable URL>',
                         locations.redact_url('http://h:99999999/x'))

    def test_scrub_replaces_raw_and_quoted(self):
        url = 'http://u:pw@h/x?t=1'
        text = 'refused %s and %s' % (url, 'http%3A%2F%2Fu%3Apw%40h%2Fx%3Ft'
                                      '%3D1')
        scrubbed = locations.scrub(text, url)
        self.assertNotIn('pw', scrubbed)
        self.assertEqual(2, scrubbed.count('http://***@h/x?***'))

    def test_translate_redacts_glance_message(self):
        url = 'http://u:pw@127.0.0.1/x?sig=1'
        err = glance.translate(
            gexc.HTTPBadRequest('URI for add location %s does not pass '
                                'filtering' % url), 'add location', 'i1',
            secret_url=url)
        self.assertIsInstance(err, exception.GlanceBadRequest)
        self.assertNotIn('pw', err.format_message())
        self.assertNotIn('sig', err.format_message())


class TestCheckUrl(base.TestCase):

    def test_http_and_https_accepted(self):
        self.assertEqual(URL, locations.check_url(' %s ' % URL))
        locations.check_url('https://h/x')

    def test_other_schemes_refused(self):
        for url in ('file:///var/lib/glance/images/x',
                    'swift+config://ref1/c/o', 'rbd://fsid/pool/img/snap',
                    'cinder://vol', 's3://a/b', 'ftp://h/x', '/tmp/x'):
            err = self.assertRaises(exception.ConfigurationError,
                                    locations.check_url, url)
            self.assertIn('[snapshot_ext] location_url',
                          err.format_message())
            self.assertIn('only http and https', err.format_message())

    def test_unset_refused(self):
        err = self.assertRaises(exception.ConfigurationError,
                                locations.check_url, None)
        self.assertIn('location_url', err.format_message())

    def test_no_host_or_bad_port(self):
        self.assertRaises(exception.ConfigurationError, locations.check_url,
                          'http:///x')
        self.assertRaises(exception.ConfigurationError, locations.check_url,
                          'http://h:port/x')

    def test_refusal_never_shows_credentials(self):
        err = self.assertRaises(exception.ConfigurationError,
                                locations.check_url,
                                'ftp://bob:hunter2@h/x?k=v')
        self.assertNotIn('hunter2', err.format_message())
        self.assertNotIn('k=v', err.format_message())

    def test_uninspectable_format_refused(self):
        for fmt in ('ploop', 'ami', 'aki', 'ari', 'qed'):
            err = self.assertRaises(exception.ConfigurationError,
                                    locations.check_disk_format, fmt)
            self.assertIn('location_disk_format', err.format_message())


class TestValidationData(base.TestCase):

    def test_parse(self):
        digest = hashlib.sha256(b'x').hexdigest()
        self.assertEqual({'os_hash_algo': 'sha256', 'os_hash_value': digest},
                         locations.parse_validation_data(
                             'SHA256:%s' % digest.upper()))
        self.assertIsNone(locations.parse_validation_data(None))

    def test_bad_values(self):
        for text in ('sha512', 'crc32:abcd', 'sha1:xyz',
                     'md5:%s' % ('a' * 31)):
            err = self.assertRaises(exception.ConfigurationError,
                                    locations.parse_validation_data, text)
            self.assertIn('location_validation_data', err.format_message())


class TestCheckObject(base.TestCase):

    def test_qcow2_payload_hashed(self):
        secret = 'http://u:pw@h/x.qcow2?sig=1'
        obj = locations.check_object(secret, QCOW2, 'qcow2')
        self.assertEqual(('qcow2', 1536), (obj.disk_format, obj.size))
        self.assertEqual({'os_hash_algo': 'sha512',
                          'os_hash_value': hashlib.sha512(QCOW2).hexdigest()},
                         obj.validation_data)
        self.assertNotIn('pw', repr(obj))
        self.assertEqual(secret, obj.url)

    def test_no_hash(self):
        obj = locations.check_object(URL, b'\0' * 512, 'raw', 'none')
        self.assertIsNone(obj.validation_data)

    def test_empty_refused(self):
        err = self.assertRaises(exception.LocationUnusable,
                                locations.check_object, URL, b'', 'raw')
        self.assertIn('empty (0 bytes)', err.format_message())
        self.assertIsInstance(err, exception.PreflightError)

    def test_dishonest_label_refused(self):
        err = self.assertRaises(exception.LocationUnusable,
                                locations.check_object, URL, QCOW2, 'raw')
        self.assertIn('content is qcow2, not raw', err.format_message())
        self.assertRaises(exception.LocationUnusable,
                          locations.check_object, URL, b'\0' * 512, 'qcow2')

    def test_vmdk_payload(self):
        obj = locations.check_object(URL, payloads.payload('vmdk'), 'vmdk')
        self.assertEqual(3584, obj.size)

    def test_pinned_hash(self):
        expected = {'os_hash_algo': 'sha256',
                    'os_hash_value': hashlib.sha256(QCOW2).hexdigest()}
        obj = locations.check_object(URL, QCOW2, 'qcow2', 'sha512',
                                     expected)
        self.assertEqual(expected, obj.validation_data)
        expected['os_hash_value'] = '0' * 64
        err = self.assertRaises(exception.LocationUnusable,
                                locations.check_object, URL, QCOW2, 'qcow2',
                                'sha512', expected)
        self.assertIn('location_validation_data', err.format_message())


class _Response:
    def __init__(self, status, body=b''):
        self.status_code = status
        self.body = body
        self.closed = False

    def iter_content(self, size):
        for i in range(0, len(self.body), size):
            yield self.body[i:i + size]

    def close(self):
        self.closed = True


class TestFetch(base.TestCase):

    def test_unauthenticated_unlogged_get(self):
        session = mock.Mock()
        session.request.return_value = resp = _Response(200, QCOW2)
        self.assertEqual(QCOW2, locations.fetch(session, URL))
        session.request.assert_called_once_with(
            URL, 'GET', authenticated=False, log=False, raise_exc=False,
            stream=True)
        self.assertTrue(resp.closed)

    def test_http_error(self):
        session = mock.Mock()
        session.request.return_value = _Response(404)
        err = self.assertRaises(exception.LocationUnusable, locations.fetch,
                                session, URL)
        self.assertIn('HTTP 404', err.format_message())

    def test_unreachable_redacted(self):
        url = 'http://u:pw@h.invalid/x?sig=1'
        session = mock.Mock()
        session.request.side_effect = requests.ConnectionError(
            'cannot connect to %s' % url)
        err = self.assertRaises(exception.LocationUnusable, locations.fetch,
                                session, url)
        self.assertIn('could not be downloaded', err.format_message())
        self.assertNotIn('pw', err.format_message())

    def test_too_large(self):
        session = mock.Mock()
        session.request.return_value = _Response(200, b'x' * 100)
        self.assertRaises(exception.LocationUnusable, locations.fetch,
                          session, URL, max_bytes=99)


class TestGlanceRefusals(base.TestCase):

    def caps(self, versions=('v2.17',), stores=None, formats=('raw',
                                                              'qcow2')):
        return capabilities.GlanceCapabilities.from_documents(
            fake_glanceclient.FakeGlance(disk_formats=list(formats))
            .schema(), [{'id': v} for v in versions], stores)

    def test_http_store_and_2_17(self):
        caps = self.caps(stores=[{'id': 'fs', 'default': 'true'},
                                 {'id': 'web', 'read-only': 'true'}])
        self.assertEqual(['web'], caps.read_only_stores)
        self.assertEqual([], locations.glance_refusals(caps, 'qcow2', 'new'))
        self.assertEqual('new', locations.choose_api(caps, 'auto'))

    def test_no_read_only_store(self):
        caps = self.caps(stores=[{'id': 'fs', 'default': 'true'}])
        (why,) = locations.glance_refusals(caps, 'raw', 'new')
        self.assertIn('no read-only (http) store', why)
        self.assertIn('fs', why)

    def test_single_store_cannot_tell(self):
        self.assertEqual([], locations.glance_refusals(self.caps(), 'raw',
                                                       'legacy'))

    def test_no_2_17(self):
        caps = self.caps(versions=('v2.16', 'v2.0'))
        self.assertEqual('legacy', locations.choose_api(caps, 'auto'))
        self.assertEqual('new', locations.choose_api(caps, 'new'))
        (why,) = locations.glance_refusals(caps, 'raw', 'new')
        self.assertIn('v2.17', why)
        self.assertEqual([], locations.glance_refusals(caps, 'raw',
                                                       'legacy'))

    def test_format_not_allowed(self):
        (why,) = locations.glance_refusals(self.caps(), 'vmdk', 'new')
        self.assertIn("disk_format 'vmdk'", why)


class TestLocationSource(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(location_url=URL, location_disk_format='qcow2')
        self.fetches = []

    def _fetch(self, session, url):
        self.fetches.append(url)
        return QCOW2

    def test_cached_then_invalidated(self):
        source = locations.LocationSource(self.conf.snapshot_ext,
                                          fetcher=self._fetch)
        first = source.get(None)
        self.assertIs(first, source.get(None))
        self.assertEqual(1, len(self.fetches))
        source.invalidate()
        source.get(None)
        self.assertEqual(2, len(self.fetches))

    def test_bad_config_refused_at_construction(self):
        self.flags(location_url='file:///etc/passwd')
        self.assertRaises(exception.ConfigurationError,
                          locations.LocationSource, self.conf.snapshot_ext)


class TestServiceToken(base.TestCase):

    def test_disabled_keeps_user_auth(self):
        user = mock.Mock()
        self.assertIs(user, glance.with_service_token(self.conf, user))

    def test_wraps_user_auth(self):
        self.flags(group='snapshot_ext_service_user',
                   send_service_user_token=True)
        self.conf.set_override('auth_type', 'admin_token',
                               group='snapshot_ext_service_user')
        ks_loading.load_auth_from_conf_options(
            self.conf, 'snapshot_ext_service_user')  # registers plugin opts
        self.conf.set_override('token', 'svc:proj:service',
                               group='snapshot_ext_service_user')
        self.conf.set_override('endpoint', 'http://glance.test',
                               group='snapshot_ext_service_user')
        user = mock.Mock()
        wrapped = glance.with_service_token(self.conf, user)
        self.assertIs(user, wrapped.user_auth)
        self.assertIsInstance(wrapped, service_token.ServiceTokenAuthWrapper)
        self.assertEqual('svc:proj:service',
                         wrapped.service_auth.get_token(mock.Mock()))

    def test_enabled_without_auth_type_refused(self):
        self.flags(group='snapshot_ext_service_user',
                   send_service_user_token=True)
        err = self.assertRaises(exception.ConfigurationError,
                                glance.with_service_token, self.conf,
                                mock.Mock())
        self.assertIn('[snapshot_ext_service_user] auth_type',
                      err.format_message())


class TestSecretLogFilter(base.TestCase):

    def capture(self, name):
        """Lines that logger ``name`` emits at DEBUG during the test."""
        logger = std_logging.getLogger(name)
        records = []
        handler = std_logging.Handler()
        handler.emit = lambda record: records.append(record.getMessage())
        logger.addHandler(handler)
        self.addCleanup(logger.removeHandler, handler)
        self.addCleanup(logger.setLevel, logger.level)
        logger.setLevel(std_logging.DEBUG)
        return logger, records

    def test_library_debug_lines_are_scrubbed(self):
        url = 'http://user:S3cret@objects.test:8080/e.qcow2?token=T0P'
        locations.protect_in_logs(url)
        ksa, records = self.capture('keystoneauth.session')
        urllib3, more = self.capture('urllib3.connectionpool')
        ksa.debug('REQ: curl -X POST -d %s', '{"url": "%s"}' % url)
        urllib3.debug('%s "%s %s HTTP/1.1" %s', 'http://objects.test:8080',
                      'GET', '/e.qcow2?token=T0P', 200)
        records += more
        self.assertEqual(2, len(records))
        for line in records:
            self.assertNotIn('S3cret', line)
            self.assertNotIn('T0P', line)
        self.assertIn('http://***@objects.test:8080/e.qcow2?***', records[0])

    def test_requoted_forms_are_scrubbed(self):
        # requests re-quotes a URL before sending: a space becomes %20.
        url = 'http://objects.test/my disk.qcow2?sig=S3CRET x'
        locations.protect_in_logs(url)
        urllib3, records = self.capture('urllib3.connectionpool')
        urllib3.debug('%s "%s %s HTTP/1.1" %s', 'http://objects.test:80',
                      'GET', '/my%20disk.qcow2?sig=S3CRET%20x', 200)
        self.assertEqual(1, len(records))
        self.assertNotIn('S3CRET', records[0])


class TestPollDelays(base.TestCase):
    """The read schedule of a location import (a pure function)."""

    def test_first_then_growing_reads(self):
        delays = list(locations.poll_delays(60.0, first=0.1))
        self.assertAlmostEqual(0.1, delays[0])
        offsets = [sum(delays[:i + 1]) for i in range(len(delays))]
        for before, after in zip(offsets[:-2], offsets[1:-1]):
            self.assertAlmostEqual(1.0 + locations.POLL_GROWTH,
                                   after / before)
        # A minute costs a few dozen reads, not one per 0.5 s.
        self.assertLess(len(delays), 30)

    def test_delays_add_up_to_the_timeout(self):
        for timeout, first in ((60.0, 0.1), (1.0, 0.5), (0.3, 5.0),
                               (10.0, 0.0), (2.0, 2.0)):
            delays = list(locations.poll_delays(timeout, first=first))
            self.assertAlmostEqual(timeout, sum(delays))
            self.assertTrue(all(d > 0 for d in delays))

    def test_first_clipped(self):
        self.assertEqual(locations.MIN_POLL_S,
                         next(locations.poll_delays(5.0, first=0.0)))
        self.assertEqual([0.3], list(locations.poll_delays(0.3, first=5.0)))

    def test_longest_bounds_later_delays_only(self):
        delays = list(locations.poll_delays(30.0, first=2.0, longest=0.5))
        self.assertEqual(2.0, delays[0])
        self.assertLessEqual(max(delays[1:]), 0.5)
        self.assertAlmostEqual(30.0, sum(delays))

    def test_shortest_delay(self):
        delays = list(locations.poll_delays(1.0, first=0.02, growth=0.01))
        self.assertTrue(all(d >= locations.MIN_POLL_S - 1e-12
                            for d in delays[:-1]))


class TestImportEstimate(base.TestCase):

    def test_hit_lowers_miss_raises(self):
        est = locations.ImportEstimate(first=1.0)
        est.record(1)
        lowered = est.first_poll
        self.assertLess(lowered, 1.0)
        est.record(2, last_miss=lowered)
        self.assertGreater(est.first_poll, lowered)

    def test_miss_raises_to_half_the_last_missed_read(self):
        est = locations.ImportEstimate(first=0.1)
        est.record(5, last_miss=3.0)
        self.assertEqual(1.5, est.first_poll)

    def test_bounds(self):
        est = locations.ImportEstimate(first=0.1, highest=2.0)
        for _ in range(200):
            est.record(1)
        self.assertEqual(locations.MIN_POLL_S, est.first_poll)
        est.record(9, last_miss=100.0)
        self.assertEqual(2.0, est.first_poll)

    def simulate(self, est, import_s, count):
        reads = []
        for _ in range(count):
            wait = locations.ImportWait(est, 60.0)
            for _delay in wait:
                if wait.offset >= import_s:
                    wait.active()
                    break
                wait.saw('importing')
            reads.append(wait.reads)
        return reads

    def test_follows_the_import_time(self):
        # One snapshot at a time (0.15 s), then sixteen (2.5 s), then one.
        est = locations.ImportEstimate()
        for import_s in (0.15, 2.5, 0.15):
            reads = self.simulate(est, import_s, 100)
            self.assertTrue(import_s / 1.5 < est.first_poll
                            < import_s * 1.5, (import_s, est.first_poll))
            # Once settled: about 1.5 reads per import, never a poll
            # every activation_poll_interval.
            tail = reads[-50:]
            self.assertLessEqual(sum(tail) / len(tail), 2.0)


class TestImportWait(base.TestCase):

    def wait(self, first=0.1):
        return locations.ImportWait(locations.ImportEstimate(first=first),
                                    60.0)

    def offsets_with_task_reads(self, wait, statuses):
        out = []
        it = iter(wait)
        for status in statuses:
            next(it)
            if wait.saw(status):
                out.append(round(wait.offset, 4))
        return out

    def test_first_read_at_the_estimate(self):
        wait = self.wait(first=0.4)
        self.assertEqual(0.4, next(iter(wait)))
        self.assertEqual(1, wait.reads)

    def test_tasks_read_when_queued_long_doubling(self):
        wait = self.wait(first=0.1)
        reads = self.offsets_with_task_reads(wait, ['queued'] * 12)
        # Not at the first reads; from 2x the first delay, then each time
        # the wait doubled.
        self.assertGreaterEqual(reads[0], 0.2)
        for before, after in zip(reads, reads[1:]):
            self.assertGreaterEqual(after, 2 * before - 1e-9)
        self.assertLess(len(reads), 6)

    def test_importing_never_reads_tasks(self):
        wait = self.wait()
        self.assertEqual([], self.offsets_with_task_reads(
            wait, ['importing'] * 10))

    def test_back_to_queued_reads_tasks_at_once(self):
        # A failed location_import task reverts the image to queued.
        wait = self.wait()
        self.assertEqual(2, len(self.offsets_with_task_reads(
            wait, ['importing', 'queued', 'queued'])))

    def test_active_teaches_the_estimate(self):
        est = locations.ImportEstimate(first=0.1)
        wait = locations.ImportWait(est, 60.0)
        it = iter(wait)
        next(it)
        wait.saw('queued')
        next(it)
        wait.active()
        self.assertGreater(est.first_poll, 0.1)

    def test_source_has_an_estimate(self):
        conf = mock.Mock(location_url='http://h/x.qcow2',
                         location_disk_format='qcow2',
                         location_validation_data=None,
                         location_hash_algo='sha512', location_api='auto',
                         capabilities_cache_ttl=300, activation_timeout=9.0)
        source = locations.LocationSource(conf)
        self.assertEqual(locations.FIRST_POLL_S,
                         source.import_estimate.first_poll)
