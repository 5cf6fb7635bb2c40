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

"""Keeping secrets of URLs out of messages and logs (design rule 8).

A location URL (``[snapshot_ext] location_url``) may carry credentials or
a signed query string; an endpoint may carry user info.  Only the form
:func:`redact_url` gives is ever logged, stored in a result or put into an
exception message; :func:`scrub` rewrites a text (a Glance error) that
quotes the URL; :func:`protect_in_logs` attaches :class:`SecretLogFilter`
to the libraries that log request lines and bodies.

Nothing here imports the rest of the package: every module may use it.
"""

from __future__ import annotations

import logging as std_logging
import threading
import urllib.parse

from requests import utils as requests_utils


def redact_url(url: str | None) -> str:
    """A URL safe to log: no user info, query string or fragment.

    ``http://user:pw@host:8080/p/x.img?sig=abc#f`` becomes
    ``http://***@host:8080/p/x.img?***``.  Anything that does not parse
    as a URL with a host becomes ``'<unparsable URL>'``.

    :param url: the URL, or ``None``.
    :returns: the redacted form; ``'<unset>'`` for ``None``/empty.
    """
    if not url:
        return '<unset>'
    try:
        parts = urllib.parse.urlsplit(url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return '<unparsable URL>'
    if not parts.scheme:
        return '<unparsable URL>'
    netloc = ''
    if host:
        netloc = '[%s]' % host if ':' in host else host
        if port is not None:
            netloc += ':%d' % port
    if parts.username is not None or parts.password is not None or (
            '@' in parts.netloc):
        netloc = '***@' + netloc
    text = '%s://%s%s' % (parts.scheme.lower(), netloc, parts.path)
    if parts.query or url.rstrip().endswith('?'):
        text += '?***'
    return text


def scrub(text: str, url: str | None) -> str:
    """Replace every occurrence of ``url`` in ``text`` by its redacted form.

    Glance error messages may quote the URL they refused.

    :param text: a message.
    :param url: the secret URL (may be ``None``).
    :returns: ``text`` without the URL's secret parts.
    """
    if not url:
        return text
    redacted = redact_url(url)
    text = text.replace(url, redacted)
    quoted = urllib.parse.quote(url, safe='')
    return text.replace(quoted, redacted)


#: Libraries that log request lines or bodies at DEBUG (keystoneauth's
#: request/response logging, urllib3's connection pool, glanceclient).
SCRUBBED_LOGGERS = (
    'keystoneauth', 'keystoneauth.session', 'keystoneauth.session.request',
    'keystoneauth.session.response', 'keystoneauth.session.body',
    'urllib3.connectionpool', 'glanceclient.common.http')


class SecretLogFilter(std_logging.Filter):
    """Rewrites log records that quote a registered secret URL.

    Attached to :data:`SCRUBBED_LOGGERS`, so even with those libraries at
    DEBUG (which logs request bodies and request lines) a location URL's
    credentials and query string never reach a log line (design rule 8).
    """

    def __init__(self) -> None:
        super().__init__()
        self._secrets: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, url: str) -> None:
        """Register ``url`` as secret, in every form a library logs it.

        That is the URL as configured, percent-quoted whole, and as
        ``requests`` re-quotes it before sending (spaces, ``%``, non-ASCII),
        each also as the ``path?query`` of urllib3's request line.
        """
        redacted = redact_url(url)
        pairs = {urllib.parse.quote(url, safe=''): redacted}
        for form in {url, requests_utils.requote_uri(url)}:
            pairs[form] = redacted
            parts = urllib.parse.urlsplit(form)
            if parts.query:
                pairs['%s?%s' % (parts.path, parts.query)] = (
                    parts.path + '?***')
            if parts.password:
                pairs[parts.password] = '***'
        with self._lock:
            self._secrets.update({k: v for k, v in pairs.items()
                                  if k and k != v})

    def filter(self, record: std_logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: B902 - never break logging
            return True
        scrubbed = message
        for secret in sorted(self._secrets, key=len, reverse=True):
            scrubbed = scrubbed.replace(secret, self._secrets[secret])
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        return True


_LOG_FILTER = SecretLogFilter()


def protect_in_logs(url: str) -> None:
    """Keep ``url``'s secret parts out of every library log line."""
    _LOG_FILTER.add(url)
    for name in SCRUBBED_LOGGERS:
        logger = std_logging.getLogger(name)
        if _LOG_FILTER not in logger.filters:
            logger.addFilter(_LOG_FILTER)
